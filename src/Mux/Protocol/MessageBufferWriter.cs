using System.Buffers;
using System.Diagnostics;
using System.Diagnostics.CodeAnalysis;

namespace Mux.Protocol;

/// <summary>
/// Where a frame that may be a large message is encoded. It starts in the thread's staging buffer; once it would outgrow
/// one segment it moves into pooled segments, so no array reaches the large object heap and nothing written is copied
/// as it grows.
/// </summary>
/// <remarks>
/// One per thread, one frame at a time; and one per message arriving in fragments, which has no head. MessagePack-CSharp
/// asks for a string's worst-case length at once, which can take an oversized segment.
/// </remarks>
internal sealed class MessageBufferWriter : IBufferWriter<byte>
{
    [ThreadStatic]
    private static MessageBufferWriter? t_writer;

    // Set while FrameWriter runs a body on this thread: where a large binary may be spliced in.
    [ThreadStatic]
    private static MessageBufferWriter? t_splicing;

    private readonly BufferSegmentPool _pool;

    // The staging buffer the frame starts in; null when not in use. Only its thread touches it.
    private PooledBufferWriter? _head;

    // Null until the frame outgrows the head. One thread at a time, like the head.
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

    public static MessageBufferWriter? SpliceTarget => t_splicing;

    public SpliceScope BeginSplicing()
    {
        MessageBufferWriter? previous = t_splicing;
        t_splicing = this;
        return new SpliceScope(previous);
    }

    public static MessageBufferWriter ForCurrentThread(PooledBufferWriter staging)
    {
        MessageBufferWriter writer = t_writer ??= new MessageBufferWriter(BufferSegmentPool.Shared);
        writer.Start(staging);
        return writer;
    }

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

    /// <summary>The caller owns the segments and returns them to this writer's pool; the head is left empty.</summary>
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

    /// <summary>Ends a frame sent whole after all: one in segments (a FragmentSize past 64 KiB) is copied back to the head.</summary>
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

    /// <summary>For a frame that will not be sent (its serializer threw); returns the bytes of its arrays.</summary>
    public long Discard()
    {
        long returned = _pool.ReturnChain(_first);
        _first = null;
        _last = null;
        _head = null;
        return returned;
    }

    /// <summary>Links <paramref name="bytes"/> in without copying: the caller keeps them unchanged until the chain is
    /// returned, and has flushed what it wrote before.</summary>
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

    /// <summary>The next <paramref name="length"/> bytes land in their own exact-size array (<see cref="BufferSegment.Landed"/>).</summary>
    public void Land(int length)
    {
        Debug.Assert(IsInSegments, "A landed binary follows its header, written before.");
        BufferSegment landed = BufferSegment.Landed(length);
        _last!.Link(landed);
        _last = landed;
    }

    /// <summary>Null while the frame still fits the head.</summary>
    private BufferSegment? SegmentFor(int sizeHint)
    {
        int needed = Math.Max(sizeHint, 1);
        if (!IsInSegments)
        {
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

        if (_head is not null)
        {
            this.Write(_head.WrittenSpan);
            _head.Reset();
        }
    }

    public
 readonly struct SpliceScope(MessageBufferWriter? previous) : IDisposable
    {
        public void Dispose() => t_splicing = previous;
    }
}
