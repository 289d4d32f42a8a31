using System.Buffers;
using System.Diagnostics;
using System.Diagnostics.CodeAnalysis;

namespace Mux.Protocol;

/// <summary>
/// Where a frame that may be a large message (Request, Response or Error) is encoded on its sender's thread. It starts in
/// the thread's staging buffer, as every small frame does; once it would outgrow one segment (64 KiB) it moves into a
/// chain of pooled segments (<see cref="BufferSegmentPool"/>), so a message of any size is encoded with no array on the
/// large object heap and no copy of what is written as it grows. <see cref="Detach"/> hands the chain to the fragments.
/// </summary>
/// <remarks>
/// One per thread (<see cref="ForCurrentThread"/>), one frame at a time; and one per message arriving in fragments
/// (MessageReassembly), which has no head. A formatter that asks for more contiguous room than a segment has
/// (MessagePack-CSharp asks for a string's worst-case length at once) gets an oversized segment; Mux's own formatters
/// for bytes write in pieces (BinaryInPieces).
/// </remarks>
internal sealed class MessageBufferWriter : IBufferWriter<byte>
{
    [ThreadStatic]
    private static MessageBufferWriter? t_writer;

    // The writer a frame is being encoded into on this thread, while FrameWriter runs its body: where a large binary may
    // be spliced in (BinaryInPieces). Null otherwise.
    [ThreadStatic]
    private static MessageBufferWriter? t_splicing;

    private readonly BufferSegmentPool _pool;

    // The staging buffer the frame starts in; null when not in use. Only its thread touches it.
    private PooledBufferWriter? _head;

    // The segments, once the frame has outgrown the head; null before. One thread at a time, like the head.
    private BufferSegment? _first;

    // Where writing goes; its RunningIndex counts the bytes of the segments before it (see BufferSegment.Link).
    private BufferSegment? _last;

    public MessageBufferWriter(BufferSegmentPool pool)
    {
        _pool = pool;
    }

    public BufferSegment? First => _first;

    public BufferSegment? Last => _last;

    [MemberNotNullWhen(true, nameof(_first), nameof(_last))]
    public bool IsInSegments => _first is not null;

    public long WrittenCount => IsInSegments ? _last.RunningIndex + _last.Used : _head?.WrittenCount ?? 0;

    /// <summary>The writer whose frame body this thread is encoding, which takes <see cref="Splice"/>; null outside.</summary>
    public static MessageBufferWriter? SpliceTarget => t_splicing;

    /// <summary>Makes this writer the thread's <see cref="SpliceTarget"/> until the returned scope ends.</summary>
    public SpliceScope BeginSplicing()
    {
        MessageBufferWriter? previous = t_splicing;
        t_splicing = this;
        return new SpliceScope(previous);
    }

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

    /// <summary>The frame's header, to patch once the body's length is known: at most one segment's worth.</summary>
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

    /// <summary>The segments holding the whole frame, moved there now if it was still in the head. The caller owns them
    /// and returns them to this writer's pool; the writer is free for the next frame and the head is empty.</summary>
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

    /// <summary>Ends a frame that is sent whole after all, leaving it in the head: one that moved into segments (only
    /// with a FragmentSize raised past 64 KiB) is copied back there and its segments are returned.</summary>
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
            head.Write(segment.IsExternal ? segment.Memory.Span : segment.Array.AsSpan(0, segment.Used));
        }

        Discard();
    }

    /// <summary>Returns the segments of a frame that will not be sent (its serializer threw) and frees the writer; returns
    /// the bytes of their arrays.</summary>
    public long Discard()
    {
        long returned = _pool.ReturnChain(_first);
        _first = null;
        _last = null;
        _head = null;
        return returned;
    }

    /// <summary>Appends <paramref name="bytes"/> without copying them: linked into the chain as they are, read by whoever
    /// sends the frame. The caller keeps them unchanged until the chain is returned, and has committed everything it wrote
    /// before (a MessagePackWriter flushed), so they follow it.</summary>
    public void Splice(ReadOnlyMemory<byte> bytes)
    {
        if (bytes.IsEmpty)
        {
            return;
        }

        if (!IsInSegments)
        {
            MoveHeadToSegments();
        }

        BufferSegment spliced = BufferSegment.External(bytes);
        _last.Link(spliced);
        _last = spliced; // Free is 0: the next write links a pooled segment after it.
    }

    /// <summary>Makes the next <paramref name="length"/> bytes written land in a new array of exactly that length, linked
    /// into the chain as its own segment (see <see cref="BufferSegment.Landed"/>). Only once the writer is in segments.</summary>
    public void Land(int length)
    {
        Debug.Assert(IsInSegments, "A landed binary follows its header, written before.");
        BufferSegment landed = BufferSegment.Landed(length);
        _last!.Link(landed);
        _last = landed;
    }

    /// <summary>The segment to write <paramref name="sizeHint"/> bytes into; null while the frame still fits the head.</summary>
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

    /// <summary>Restores the thread's previous <see cref="SpliceTarget"/>.</summary>
    public readonly struct SpliceScope(MessageBufferWriter? previous) : IDisposable
    {
        public void Dispose() => t_splicing = previous;
    }
}
