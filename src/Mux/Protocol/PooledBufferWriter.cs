using System.Buffers;
using System.Diagnostics.CodeAnalysis;

namespace Mux.Protocol;

/// <summary>A growable <see cref="IBufferWriter{T}"/> over arrays rented from <see cref="ArrayPool{T}.Shared"/>.</summary>
internal sealed class PooledBufferWriter : IBufferWriter<byte>, IDisposable
{
    // The rented array; after Dispose an empty one from no pool, so a second Dispose returns nothing and nothing checks null.
    private byte[] _buffer;
    private int _written;

    public PooledBufferWriter(int initialCapacity = 256)
    {
        ArgumentOutOfRangeException.ThrowIfNegativeOrZero(initialCapacity);
        _buffer = ArrayPool<byte>.Shared.Rent(initialCapacity);
    }

    public int WrittenCount => _written;

    public ReadOnlySpan<byte> WrittenSpan => _buffer.AsSpan(0, _written);

    public ReadOnlyMemory<byte> WrittenMemory => _buffer.AsMemory(0, _written);

    public byte[] Buffer => _buffer;

    public void Reset() => _written = 0;

    /// <inheritdoc/>
    public void Advance(int count)
    {
        if ((uint)count > (uint)(_buffer.Length - _written))
        {
            ThrowAdvancedTooFar(count);
        }

        _written += count;
    }

    /// <inheritdoc/>
    public Memory<byte> GetMemory(int sizeHint = 0)
    {
        EnsureCapacity(sizeHint);
        return _buffer.AsMemory(_written);
    }

    /// <inheritdoc/>
    public Span<byte> GetSpan(int sizeHint = 0)
    {
        EnsureCapacity(sizeHint);
        return _buffer.AsSpan(_written);
    }

    public void Dispose()
    {
        byte[] buffer = _buffer;
        _buffer = [];
        _written = 0;
        if (buffer.Length != 0)
        {
            ArrayPool<byte>.Shared.Return(buffer);
        }
    }

    private void EnsureCapacity(int sizeHint)
    {
        if (sizeHint < 1)
        {
            sizeHint = 1;
        }

        if (sizeHint <= _buffer.Length - _written)
        {
            return;
        }

        Grow(sizeHint);
    }

    private void Grow(int sizeHint)
    {
        byte[] old = _buffer;
        long needed = (long)_written + sizeHint;
        if (needed > Array.MaxLength)
        {
            ThrowTooLarge(needed);
        }

        int
 newSize = (int)Math.Min(Math.Max(needed, (long)old.Length * 2), Array.MaxLength);
        byte[] grown = ArrayPool<byte>.Shared.Rent(newSize);
        old.AsSpan(0, _written).CopyTo(grown);
        _buffer = grown;
        if (old.Length != 0) // Else disposed: its empty array goes back nowhere.
        {
            ArrayPool<byte>.Shared.Return(old);
        }
    }

    // Shared with MessageBufferWriter, so both throw the same message.
    [DoesNotReturn]
    internal static void ThrowAdvancedTooFar(int count) =>
        throw new ArgumentOutOfRangeException(nameof(count), count, "Cannot advance past the end of the buffer obtained from GetSpan or GetMemory.");

    [DoesNotReturn]
    private static void ThrowTooLarge(long needed) =>
        throw new InvalidOperationException($"A buffer of {needed} bytes would exceed the maximum array length.");
}
