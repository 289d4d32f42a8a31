namespace Mux.Tests.Streaming;

/// <summary>The streaming contract the tests call: server, client and duplex streams.</summary>
[MuxService]
public interface IStreamService
{
    /// <summary>Streams start, start + 1, ... (count items).</summary>
    IAsyncEnumerable<int> Range(int start, int count, CancellationToken cancellationToken = default);

    /// <summary>Streams <paramref name="count"/> arrays of <paramref name="size"/> bytes, each filled by StreamService.FillBlob with its index.</summary>
    IAsyncEnumerable<byte[]> Blobs(int count, int size);

    /// <summary>Streams 0 .. count-1, blocking its thread before item StreamService.GatedAt until StreamService.Gate is set.</summary>
    IAsyncEnumerable<int> Gated(int count);

    /// <summary>Streams 0, 1, 2, ... until cancelled; records that its token fired.</summary>
    IAsyncEnumerable<int> Forever(CancellationToken cancellationToken = default);

    /// <summary>Streams 0 .. count-1, then throws InvalidOperationException(message).</summary>
    IAsyncEnumerable<int> ThrowAfter(int count, string message);

    /// <summary>Streams 0 .. count-1, then gives up with MuxRemoteException(Canceled, message).</summary>
    IAsyncEnumerable<int> CancelAfter(int count, string message);

    /// <summary>Sums the client's stream.</summary>
    Task<long> Sum(IAsyncEnumerable<int> values);

    /// <summary>Reads <paramref name="take"/> items of the client's stream, then answers with their sum without reading on.</summary>
    ValueTask<int> SumFirst(int take, IAsyncEnumerable<int> values);

    /// <summary>Reads the client's stream until it ends or fails; records how it failed.</summary>
    Task Drain(IAsyncEnumerable<int> values, CancellationToken cancellationToken = default);

    /// <summary>Reads nothing of the client's stream; waits until the call is cancelled.</summary>
    Task Ignore(IAsyncEnumerable<int> values, CancellationToken cancellationToken = default);

    /// <summary>Answers each line of the client's stream with prefix + line, as it arrives.</summary>
    IAsyncEnumerable<string> Echo(string prefix, IAsyncEnumerable<string> lines, CancellationToken cancellationToken = default);
}
