using System.Buffers;
using System.Diagnostics;
using System.Diagnostics.CodeAnalysis;

namespace Mux.Protocol;

/// <summary>
/// Where a frame that may be a large message (a Request, Response or Error) is encoded on its
/// sender's thread. Its bytes go into the thread's staging buffer, as every small frame's do, until
/// they would outgrow one segment (64 KiB); then they move into a chain of pooled segments
/// (<see cref="BufferSegmentPool"/>) and the rest of the frame follows there, so a message of any
/// size is encoded without an array on the large object heap and without copying what was already
/// written when it grows (a contiguous buffer doubled up to twice the message, copying each time).
/// The chain is then handed to the message's fragments (<see cref="Detach"/>).
/// </summary>
/// <remarks>
/// One per thread (<see cref="ForCurrentThread"/>), used for one frame at a time; and one per
/// message arriving in fragments (MessageReassembly), which has no head and starts in segments.
/// A formatter that asks for more contiguous room than a segment has (MessagePack-CSharp asks for a
/// whole string's worst-case length at once) gets one oversized segment from ArrayPool.Shared; Mux's
/// own formatters for bytes write in pieces (see Serialization/BinaryInPieces).
/// </remarks>
internal sealed class MessageBufferWriter : IBufferWriter<byte>
{
    [ThreadStatic]
    private static MessageBufferWriter? t_writer;

    private readonly BufferSegmentPool _pool;

    // The staging buffer the frame starts in; null when not in use. Only its thread touches it.
    private PooledBufferWriter? _head;

    // The segments, once the frame has outgrown the head; null before. _last is where writing goes;
    // its RunningIndex counts the bytes of the segments before it (see BufferSegment.Link).
    private BufferSegment? _first;
    private BufferSegment? _last;

    /// <summary>Creates a writer whose segments come from <paramref name="pool"/>.</summary>
    public MessageBufferWriter(BufferSegmentPool pool)
    {
        _pool = pool;
    }

    /// <summary>The frame's first segment; null before it has moved into segments.</summary>
    public BufferSegment? First => _first;

    /// <summary>The segment being written; null before the frame has moved into segments.</summary>
    public BufferSegment? Last => _last;

    /// <summary>Whether the frame has moved into segments.</summary>
    [MemberNotNullWhen(true, nameof(_first), nameof(_last))]
    public bool IsInSegments => _first is not null;

    /// <summary>Bytes of the frame written so far.</summary>
    public long WrittenCount => IsInSegments ? _last.RunningIndex + _last.Used : _head?.WrittenCount ?? 0;

    /// <summary>This thread's writer, started on <paramref name="staging"/> (empty).</summary>
    public static MessageBufferWriter ForCurrentThread(PooledBufferWriter staging)
    {
        MessageBufferWriter writer = t_writer ??= new MessageBufferWriter(BufferSegmentPool.Shared);
        writer.Start(staging);
        return writer;
    }

    /// <summary>Starts a frame in <paramref name="head"/>, which must be empty.</summary>
    public void Start(PooledBufferWriter head)
    {
        Debug.Assert(_first is null, "The previous frame was detached, moved or discarded.");
        Debug.Assert(head.WrittenCount == 0, "A frame starts an empty staging buffer.");
        _head = head;
    }

    /// <summary>The first <paramref name="count"/> bytes of the frame (its header, to patch once the
    /// body's length is known). At most one segment's worth.</summary>
    public Span<byte> FirstBytes(int count) =>
        IsInSegments ? _first.Array.AsSpan(0, count) : _head!.Buffer.AsSpan(0, count);

    /// <inheritdoc/>
    public void Advance(int count)
    {
        if (!IsInSegments)
        {
            _head!.Advance(count);
            return;
        }

        if ((uint)count > (uint)_last.Free)
        {
            PooledBufferWriter.ThrowAdvancedTooFar(count);
        }

        _last.Used += count;
    }

    /// <inheritdoc/>
    public Memory<byte> GetMemory(int sizeHint = 0)
    {
        BufferSegment? segment = SegmentFor(sizeHint);
        return segment is null ? _head!.GetMemory(sizeHint) : segment.Array.AsMemory(segment.Used);
    }

    /// <inheritdoc/>
    public Span<byte> GetSpan(int sizeHint = 0)
    {
        BufferSegment? segment = SegmentFor(sizeHint);
        return segment is null ? _head!.GetSpan(sizeHint) : segment.Array.AsSpan(segment.Used);
    }

    /// <summary>The segments holding the whole frame (moved there now if it still fits the head),
    /// which the caller now owns and returns to <see cref="BufferSegmentPool.Shared"/> (or this
    /// writer's pool); the writer is free for the next frame and the head is empty.</summary>
    public BufferSegment Detach()
    {
        if (!IsInSegments)
        {
            MoveHeadToSegments();
        }

        BufferSegment first = _first;
        _last.Seal();
        _first = null; // The caller's now: nothing for Discard to return.
        Discard();
        return first;
    }

    /// <summary>Ends a frame that goes in a single frame after all, leaving it whole in the head:
    /// one that moved into segments (only with a FragmentSize raised past 64 KiB) is put back there
    /// as one contiguous frame, and its segments are returned.</summary>
    public void End()
    {
        if (!IsInSegments)
        {
            _head = null;
            return;
        }

        PooledBufferWriter head = _head!;
        Debug.Assert(head.WrittenCount == 0);
        for (BufferSegment? segment = _first; segment is not null; segment = segment.NextSegment)
        {
            head.Write(segment.Array.AsSpan(0, segment.Used));
        }

        Discard();
    }

    /// <summary>Returns the segments of a frame that will not be sent (its serializer threw), and
    /// frees the writer for the next frame. Returns the bytes of their arrays.</summary>
    public long Discard()
    {
        long returned = _pool.ReturnChain(_first);
        _first = null;
        _last = null;
        _head = null;
        return returned;
    }

    /// <summary>The segment to write into for <paramref name="sizeHint"/> bytes; null while the
    /// frame still fits the head (the head hands out its own memory then).</summary>
    private BufferSegment? SegmentFor(int sizeHint)
    {
        int needed = Math.Max(sizeHint, 1);
        if (!IsInSegments)
        {
            // The head grows by doubling up to one segment's size, like any staging buffer; a frame
            // that needs more moves out of it.
            if (_head is not null && _head.WrittenCount + (long)needed <= BufferSegmentPool.SegmentSize)
            {
                return null;
            }

            MoveHeadToSegments();
        }

        if (_last.Free < needed)
        {
            BufferSegment next = _pool.Rent(needed);
            _last.Link(next);
            _last = next;
        }

        return _last;
    }

    /// <summary>Copies what the head holds, if any (at most a segment's worth, unless its thread's
    /// staging buffer was already larger), into segments, and empties the head.</summary>
    [MemberNotNull(nameof(_first), nameof(_last))]
    private void MoveHeadToSegments()
    {
        Debug.Assert(_first is null);
        BufferSegment first = _pool.Rent();
        _first = first;
        _last = first;

        // Written through this writer, now in segments: it links a new one each time one is full.
        if (_head is not null)
        {
            this.Write(_head.WrittenSpan);
            _head.Reset();
        }
    }
}
