using System.Buffers;
using System.Buffers.Binary;
using System.Diagnostics;
using Mux.Protocol;
using Mux.Streaming;

namespace Mux.Connection;

/// <summary>
/// A message too large for one fragment, queued for the writer: the whole frame as FrameWriter
/// encoded it, in the pooled segments its sender handed over (<see cref="MessageBufferWriter"/>),
/// sent as fragments of at most <see cref="FragmentSize"/> message bytes, one per writer turn
/// (docs/protocol.md, *Fragments*). Each segment goes back to its pool as soon as its last byte has
/// been written, so a message holds less and less memory as it goes out.
/// Created by the sender; after that only the writer role holder touches it.
/// </summary>
internal sealed class OutboundMessage : IDisposable
{
    private readonly BufferSegmentPool _pool;

    // The frame's size on the wire, its length prefix included.
    private readonly long _length;

    // The message's own type and flags, and its call id, from its header (read once: the segment
    // holding the header is returned once written, and a Cancel may ask IsRequestOf any time).
    private readonly byte _type;
    private readonly byte _flags;
    private readonly uint _callId;

    // The segment holding the next byte to send (null once all are returned), and that byte's
    // offset in it; the segments before it have been returned.
    private BufferSegment? _segment;
    private int _offset = ProtocolConstants.FrameHeaderSize;

    // The offset in the frame of the next message byte to send; starts right after the common header.
    private long _position = ProtocolConstants.FrameHeaderSize;

    /// <summary>Takes over the segments holding a frame of <paramref name="length"/> bytes (from
    /// <see cref="MessageBufferWriter.Detach"/>), which go back to <paramref name="pool"/>.</summary>
    public OutboundMessage(BufferSegment frame, long length, int fragmentSize, BufferSegmentPool pool)
    {
        Debug.Assert(frame.Used >= ProtocolConstants.FrameHeaderSize, "The header is in the first segment.");
        ReadOnlySpan<byte> header = frame.Array;
        _type = header[4];
        _flags = header[5];
        _callId = BinaryPrimitives.ReadUInt32LittleEndian(header[6..]);
        _segment = frame;
        _length = length;
        _pool = pool;
        FragmentSize = fragmentSize;
    }

    /// <summary>The most message bytes one fragment carries.</summary>
    public int FragmentSize { get; }

    /// <summary>Told by the writer once the last fragment has been written; null for most messages.</summary>
    public CallStreams? WhenWritten { get; init; }

    /// <summary>Its call was cancelled while the message was being sent (a Request, with
    /// cancelEndsFragments in force): the writer sends no more of it. Written and read under the
    /// connection's outbound lock.</summary>
    public bool Aborted { get; set; }

    /// <summary>Its call was cancelled before any fragment went out (a Request): the writer writes
    /// the Cancel right after the first fragment, since the peer must see the Request before the
    /// Cancel (a Cancel for a call it has not seen is dropped, and the Request would then run with
    /// nothing to cancel it). Written and read under the connection's outbound lock.</summary>
    public bool CancelAfterFirstFragment { get; set; }

    /// <summary>With <see cref="CancelAfterFirstFragment"/>: whether the peer takes that Cancel to
    /// end the message (cancelEndsFragments), so that no more of it is sent.</summary>
    public bool CancelEndsIt { get; set; }

    /// <summary>Whether a fragment of it has been written. Read under the connection's outbound
    /// lock for a message in its queue: the writer moves the position before it puts the message
    /// back under that lock.</summary>
    public bool Started => _position > ProtocolConstants.FrameHeaderSize;

    /// <summary>Whether this is the Request of call <paramref name="callId"/> in the id space of
    /// <paramref name="flags"/> (ServerInitiated or not): what a Cancel with those would end.</summary>
    public bool IsRequestOf(uint callId, FrameFlags flags) =>
        _type == (byte)FrameType.Request
        && _callId == callId
        && (((FrameFlags)_flags ^ flags) & FrameFlags.ServerInitiated) == 0;

    /// <summary>Writes the next fragment into <paramref name="output"/>. Returns true when it was the last.</summary>
    public bool WriteNextFragment(IBufferWriter<byte> output)
    {
        bool first = _position == ProtocolConstants.FrameHeaderSize;
        long remaining = _length - _position;
        int chunk = (int)Math.Min(remaining, FragmentSize);
        bool last = chunk == remaining;

        int headerSize = ProtocolConstants.FrameHeaderSize + (first ? ProtocolConstants.FragmentTotalSize : 0);
        Span<byte> header = output.GetSpan(headerSize);
        BinaryPrimitives.WriteUInt32LittleEndian(header, (uint)(headerSize - ProtocolConstants.LengthPrefixSize + chunk));
        if (first)
        {
            // The message's own type and flags, plus MoreFragments, then its total size.
            header[4] = _type;
            header[5] = (byte)(_flags | (byte)FrameFlags.MoreFragments);
            BinaryPrimitives.WriteUInt32LittleEndian(header[ProtocolConstants.FrameHeaderSize..], (uint)(_length - ProtocolConstants.FrameHeaderSize));
        }
        else
        {
            // A call the server started keeps ServerInitiated on every fragment: the receiver keeps
            // the two id spaces' messages apart by it.
            header[4] = (byte)FrameType.Continuation;
            header[5] = (byte)((last ? FrameFlags.None : FrameFlags.MoreFragments) | ((FrameFlags)_flags & FrameFlags.ServerInitiated));
        }

        BinaryPrimitives.WriteUInt32LittleEndian(header[6..], _callId);
        output.Advance(headerSize);
        CopyTo(output, chunk);
        _position += chunk;
        return last;
    }

    /// <summary>Writes the Cancel of this message's call, in its id space.</summary>
    public void WriteCancel(IBufferWriter<byte> output) =>
        FrameWriter.WriteRaw(output, FrameType.Cancel, _callId, ReadOnlySpan<byte>.Empty, (FrameFlags)_flags & FrameFlags.ServerInitiated);

    /// <summary>Copies the next <paramref name="count"/> bytes of the frame, returning each segment
    /// once it has been read to its end.</summary>
    private void CopyTo(IBufferWriter<byte> output, int count)
    {
        while (count > 0)
        {
            BufferSegment segment = _segment!;
            if (_offset == segment.Used)
            {
                _segment = segment.NextSegment;
                _offset = 0;
                _pool.Return(segment);
                continue;
            }

            int part = Math.Min(count, segment.Used - _offset);
            output.Write(segment.Array.AsSpan(_offset, part));
            _offset += part;
            count -= part;
        }
    }

    /// <summary>Returns the segments not yet returned to their pool. Safe to call twice.</summary>
    public void Dispose()
    {
        BufferSegment? segment = _segment;
        _segment = null;
        _pool.ReturnChain(segment);
    }
}
