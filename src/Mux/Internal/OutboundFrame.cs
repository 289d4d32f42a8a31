using System.Buffers;

namespace Mux.Internal;

/// <summary>
/// A complete encoded frame waiting in the outbound queue: <see cref="Length"/> bytes at the start
/// of <see cref="Buffer"/>, an array rented from <see cref="ArrayPool{T}.Shared"/> that the writer
/// returns after copying it into the pipe.
/// </summary>
internal readonly struct OutboundFrame(byte[] buffer, int length)
{
    public byte[] Buffer { get; } = buffer;

    public int Length { get; } = length;
}
