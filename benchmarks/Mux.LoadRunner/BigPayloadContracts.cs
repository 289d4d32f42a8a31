using Mux.Diagnostics;

namespace Mux.LoadRunner;

/// <summary>The service of the large-payload measurement (--big-payload-mib): a small call and an upload.</summary>
[MuxService]
public interface IBigPayloadService
{
    ValueTask<int> Add(int a, int b);

    /// <summary>Returns the length of what arrived.</summary>
    Task<int> Upload(byte[] data);

    /// <summary>Returns the server's payload of the measurement (--big-download).</summary>
    Task<byte[]> Download();

    /// <summary>The server process's <see cref="BigPayloadCounters"/>, as <see cref="BigPayloadCounters.ToArray"/>.</summary>
    Task<long[]> Counters();
}

/// <summary>Serves <see cref="IBigPayloadService"/>, in the runner's process or in a server child process.</summary>
internal sealed class BigPayloadService(byte[] payload) : IBigPayloadService
{
    public ValueTask<int> Add(int a, int b) => ValueTask.FromResult(a + b);

    public Task<int> Upload(byte[] data) => Task.FromResult(data.Length);

    public Task<byte[]> Download() => Task.FromResult(payload);

    public Task<long[]> Counters() => Task.FromResult(BigPayloadCounters.Take().ToArray());
}

/// <summary>
/// One process's copy and collection counters at one instant: the bytes Mux's own code copied at each copy point of a
/// large message (Mux.Diagnostics.PayloadCopies: counted there once per fragment or per large binary) and the full
/// collections so far.
/// </summary>
internal readonly record struct BigPayloadCounters(
    long Serialized, long Written, long Reassembled, long Deserialized, long Taken, int FullCollections, TimeSpan Pause)
{
    public static BigPayloadCounters Take() => new(
        PayloadCopies.SerializedBytes, PayloadCopies.WrittenBytes, PayloadCopies.ReassembledBytes, PayloadCopies.DeserializedBytes,
        PayloadCopies.TakenBytes, GC.CollectionCount(2), GC.GetTotalPauseDuration());

    public static BigPayloadCounters From(long[] values) =>
        new(values[0], values[1], values[2], values[3], values[4], (int)values[5], TimeSpan.FromTicks(values[6]));

    /// <summary>Bytes copied by the sending side: the serializer into the message, the writer into the pipe.</summary>
    public long SenderBytes => Serialized + Written;

    /// <summary>Bytes copied by the receiving side: the reader out of the receive buffer, the formatters out of the
    /// message, and whole messages copied out instead of taken over.</summary>
    public long ReceiverBytes => Reassembled + Deserialized + Taken;

    public long[] ToArray() => [Serialized, Written, Reassembled, Deserialized, Taken, FullCollections, Pause.Ticks];

    public static BigPayloadCounters operator -(BigPayloadCounters a, BigPayloadCounters b) => new(
        a.Serialized - b.Serialized, a.Written - b.Written, a.Reassembled - b.Reassembled, a.Deserialized - b.Deserialized,
        a.Taken - b.Taken, a.FullCollections - b.FullCollections, a.Pause - b.Pause);
}
