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
