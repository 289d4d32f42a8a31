using System.Buffers;

namespace Mux.Tests.Fragments;

/// <summary>Each bytes type Mux writes in pieces (Serialization/BinaryInPieces), echoed, and a
/// string (whose formatter asks for its worst-case length as one span).</summary>
[MuxService]
public interface IBytesService
{
    Task<byte[]> EchoArray(byte[] data);

    Task<ReadOnlyMemory<byte>> EchoReadOnlyMemory(ReadOnlyMemory<byte> data);

    Task<Memory<byte>> EchoMemory(Memory<byte> data);

    Task<ArraySegment<byte>> EchoArraySegment(ArraySegment<byte> data);

    Task<ReadOnlySequence<byte>> EchoSequence(ReadOnlySequence<byte> data);

    Task<string> EchoText(string text);
}

/// <summary>Serves <see cref="IBytesService"/>: returns each argument as it arrived.</summary>
public sealed class BytesService : IBytesService
{
    public Task<byte[]> EchoArray(byte[] data) => Task.FromResult(data);

    public Task<ReadOnlyMemory<byte>> EchoReadOnlyMemory(ReadOnlyMemory<byte> data) => Task.FromResult(data);

    public Task<Memory<byte>> EchoMemory(Memory<byte> data) => Task.FromResult(data);

    public Task<ArraySegment<byte>> EchoArraySegment(ArraySegment<byte> data) => Task.FromResult(data);

    public Task<ReadOnlySequence<byte>> EchoSequence(ReadOnlySequence<byte> data) => Task.FromResult(data);

    public Task<string> EchoText(string text) => Task.FromResult(text);
}

/// <summary>Calls the <see cref="IBytesService"/> echo of one bytes type, named as in the tests' theories.</summary>
public static class BytesEcho
{
    /// <summary>Echoes <paramref name="data"/> as <paramref name="type"/>; returns the result as
    /// it came (boxed), so that the test's own copies are made outside the watched window.</summary>
    public static async Task<object> EchoAsync(IBytesService proxy, string type, byte[] data) => type switch
    {
        "byte[]" => await proxy.EchoArray(data),
        "ReadOnlyMemory<byte>" => await proxy.EchoReadOnlyMemory(data),
        "Memory<byte>" => await proxy.EchoMemory(data),
        "ArraySegment<byte>" => await proxy.EchoArraySegment(new ArraySegment<byte>(data)),
        "ReadOnlySequence<byte>" => await proxy.EchoSequence(new ReadOnlySequence<byte>(data)),
        _ => throw new ArgumentOutOfRangeException(nameof(type), type, null),
    };

    /// <summary>The bytes of a value <see cref="EchoAsync"/> returned.</summary>
    public static byte[] Bytes(object echoed) => echoed switch
    {
        byte[] array => array,
        ReadOnlyMemory<byte> memory => memory.ToArray(),
        Memory<byte> memory => memory.ToArray(),
        ArraySegment<byte> segment => [.. segment],
        ReadOnlySequence<byte> sequence => sequence.ToArray(),
        _ => throw new ArgumentOutOfRangeException(nameof(echoed), echoed, null),
    };
}
