using System.Buffers;
using Mux.Protocol;

namespace Mux.Connection;

/// <summary>
/// One message arriving in fragments (docs/protocol.md, *Fragments*): what its first fragment said,
/// and its payload so far in one array rented from the shared pool, grown as bytes arrive (so memory follows what the peer actually sent, never what it announced) and returned
/// when the message has been handed on. A message over MaxMessageSize keeps no bytes at all: it is
/// only counted until its last fragment. Used by the reader loop only.
/// </summary>
internal sealed class MessageReassembly
{
    // The first rented array is at most this large; a larger message grows it fourfold each time
    // (copying a third of its size in all), never past what it announced.
    private const int InitialBufferSize = 256 * 1024;

    private byte[]? _buffer;
    private int _received;

    public MessageReassembly(in Frame first, bool skip)
    {
        Type = first.Type;
        Flags = first.Flags & ~FrameFlags.MoreFragments;
        CallId = first.CallId;
        MethodId = first.MethodId;
        RemainingMilliseconds = first.RemainingMilliseconds;
        MessageSize = first.MessageSize;
        PayloadSize = first.PayloadSize;
        IsSkipped = skip;
        if (!first.TraceContext.IsEmpty && !skip)
        {
            _traceContext = first.TraceContext.ToArray(); // At most ~600 bytes, once per big message.
        }

        Append(first.Payload);
    }

    private readonly byte[]? _traceContext;

    public FrameType Type { get; }

    public FrameFlags Flags { get; }

    public uint CallId { get; }

    public uint MethodId { get; }

    /// <summary>A Request's deadline header, from its first fragment.</summary>
    public uint RemainingMilliseconds { get; }

    /// <summary>The size the first fragment announced (the whole message after the common header).</summary>
    public uint MessageSize { get; }

    /// <summary>The size of the reassembled payload.</summary>
    public long PayloadSize { get; }

    /// <summary>Over MaxMessageSize, or no call waits for it: its bytes are counted and dropped.</summary>
    public bool IsSkipped { get; }

    /// <summary>Counted against MaxMessagesInProgress while it arrives.</summary>
    public bool IsBounded { get; init; }

    /// <summary>Payload bytes received so far (kept or, when skipped, dropped).</summary>
    public long Received { get; private set; }

    /// <summary>A Cancel for the call arrived while its Request was still arriving: delivered
    /// right after the Request.</summary>
    public bool CancelPending { get; set; }

    /// <summary>Adds the next fragment's bytes. Caller has checked that they fit the announced size.</summary>
    public void Append(in ReadOnlySequence<byte> bytes)
    {
        Received += bytes.Length;
        if (IsSkipped || bytes.IsEmpty)
        {
            return;
        }

        int needed = _received + (int)bytes.Length;
        if (_buffer is null || _buffer.Length < needed)
        {
            Grow(needed);
        }

        bytes.CopyTo(_buffer.AsSpan(_received));
        _received = needed;
    }

    private void Grow(int needed)
    {
        long size = Math.Max(needed, _buffer is null ? Math.Min(PayloadSize, InitialBufferSize) : (long)_buffer.Length * 4);
        byte[] grown = ArrayPool<byte>.Shared.Rent((int)Math.Min(Math.Min(size, PayloadSize), Array.MaxLength));
        if (_buffer is not null)
        {
            _buffer.AsSpan(0, _received).CopyTo(grown);
            ArrayPool<byte>.Shared.Return(_buffer);
        }

        _buffer = grown;
    }

    /// <summary>The whole message as one frame, as if it had arrived unfragmented. Valid until <see cref="Release"/>.</summary>
    public Frame ToFrame() => new(
        Type,
        Flags,
        CallId,
        MethodId,
        _buffer is null ? ReadOnlySequence<byte>.Empty : new ReadOnlySequence<byte>(_buffer, 0, _received),
        _traceContext is null ? default : new ReadOnlySequence<byte>(_traceContext),
        RemainingMilliseconds);

    /// <summary>Returns the buffer to the pool.</summary>
    public void Release()
    {
        byte[]? buffer = _buffer;
        _buffer = null;
        _received = 0;
        if (buffer is not null)
        {
            ArrayPool<byte>.Shared.Return(buffer);
        }
    }
}
