using System.Buffers;
using Mux.Diagnostics;

namespace Mux.Connection;

/// <summary>
/// A message's bytes taken out of the receive buffer. A small one is copied into an array the pooled call keeps, so
/// copying allocates nothing in steady state; one in fragments is taken over whole, where copying it would hold up every
/// other call's frame; any other is copied into a rented array.
/// </summary>

internal struct ReceivedBytes
{
    // Kept across the lives of the pooled call: grown to the largest small message.
    private byte[]? _owned;

    // The first _length bytes of _array (_owned, else rented), or the segments of _message (then _array is empty); _array
    // is null while no message is held.
    private byte[]? _array;
    private int _length;
    private MessageReassembly? _message;

    public readonly bool IsHeld => _array is not null;

    public readonly ReadOnlySequence<byte> Sequence =>
        _message is { } message ? message.Payload : new ReadOnlySequence<byte>(_array ?? [], 0, _length);

    // Null when the bytes are in one array, Memory.
    public readonly MessageReassembly? Message => _message;

    public readonly ReadOnlyMemory<byte> Memory => _array.AsMemory(0, _length);

    // While holding none: into the kept array up to maxOwned bytes; else the message they are, when the reader loop of the
    // connection that delivered them reassembled it; else into a rented array.
    public void Take(in ReadOnlySequence<byte> bytes, int maxOwned, MuxConnection? reader)
    {
        int length = checked((int)bytes.Length);
        _length = length;
        if (length <= maxOwned)
        {
            if (_owned is null || _owned.Length < length)
            {
                _owned = new byte[Math.Max(length, 64)];
            }

            _array = _owned;
        }
        else if (reader?.Inbound.TakeDeliveredMessage(bytes) is { } message)
        {
            _message = message;
            _array = [];
            return;
        }
        else
        {
            _array = ArrayPool<byte>.Shared.Rent(length);
            PayloadCopies.Taken(length);
        }

        bytes.CopyTo(_array);
    }

    // Hands the message on to whoever releases it, so the pooled call can be reused before the message has been read.
    public ReceivedBytes Detach()
    {
        ReceivedBytes detached = this;
        _array = null;
        _message = null;
        return detached;
    }

    public void Release()
    {
        if (_array is { Length: > 0 } array && array != _owned)
        {
            ArrayPool<byte>.Shared.Return(array);
        }

        _array = null;
        _message?.Release();
        _message = null;
    }
}
