using System.Buffers;

namespace Mux.Connection;

/// <summary>
/// A message's bytes taken out of the receive buffer, which the reader loop reuses once it moves
/// on: a served call's arguments (IncomingCall), or the answer to one of this side's calls
/// (PendingCall). A small message is copied into an array kept across the lives of the pooled call
/// that holds this, so copying allocates nothing in steady state (renting one per message ran the
/// shared array pool dry with hundreds in flight); a message that arrived in fragments is taken over
/// whole, its pooled chunks and all, from the reader loop, which would otherwise copy all of it
/// (16 MiB, say) while every other call's frame waited; any other is copied into a rented array.
/// </summary>
internal struct ReceivedBytes
{
    // Kept across the lives of the pooled call: grown to the largest small message.
    private byte[]? _owned;

    // The first _length bytes of _array (_owned, else rented), or the chunks of _message (then
    // _array is empty); _array is null while no message is held.
    private byte[]? _array;
    private int _length;
    private MessageReassembly? _message;

    /// <summary>Whether a message is held (taken, and not released or detached yet).</summary>
    public readonly bool IsHeld => _array is not null;

    /// <summary>The message's bytes, valid until <see cref="Release"/>.</summary>
    public readonly ReadOnlySequence<byte> Sequence =>
        _message is { } message ? message.Payload : new ReadOnlySequence<byte>(_array ?? [], 0, _length);

    /// <summary>The message taken over from the reader loop, or null when the bytes are in one
    /// array (<see cref="Memory"/>).</summary>
    public readonly MessageReassembly? Message => _message;

    /// <summary>The bytes when they are in one array (<see cref="Message"/> is null).</summary>
    public readonly ReadOnlyMemory<byte> Memory => _array.AsMemory(0, _length);

    /// <summary>Takes <paramref name="bytes"/> while holding none: into the kept array up to
    /// <paramref name="maxOwned"/> bytes; else the message they are, when <paramref name="reader"/>
    /// (the connection whose reader loop delivered them) reassembled it; else into a rented array.</summary>
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
        else if (reader?.TakeDeliveredMessage(bytes) is { } message)
        {
            _message = message;
            _array = [];
            return;
        }
        else
        {
            _array = ArrayPool<byte>.Shared.Rent(length);
        }

        bytes.CopyTo(_array);
    }

    /// <summary>Hands the message on to whoever releases it, leaving this holding none, so that the
    /// pooled call can be reused before the message has been read.</summary>
    public ReceivedBytes Detach()
    {
        ReceivedBytes detached = this;
        _array = null;
        _message = null;
        return detached;
    }

    /// <summary>Gives back the rented array or the taken-over message, if any; holds none after.</summary>
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
