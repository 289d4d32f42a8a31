using System.Buffers;
using System.Buffers.Binary;
using System.Diagnostics;
using Mux.Diagnostics;
using Mux.Protocol;
using Mux.Streaming;

namespace Mux.Connection;

/// <summary>
/// A whole encoded frame in pooled and spliced segments, sent one fragment per writer turn; each segment goes back to its
/// pool once its last byte is written. After its sender queues it, only the writer role holder touches it, except for the
/// flags a Cancel sets under the queue's lock.
/// </summary>

internal sealed class OutboundMessage : IDisposable
{
    private readonly BufferSegmentPool _pool;

    // The frame's size on the wire, its length prefix included.
    private readonly long _length;

    // From its header, read once: the segment holding it is returned once written, and a Cancel may ask IsRequestOf any time.
    private readonly byte _type;
    private readonly byte _flags;
    private readonly uint _callId;

    // The segment holding the next byte to send (null once all are returned), and that byte's offset in it.
    private BufferSegment? _segment;
    private int _offset = ProtocolConstants.FrameHeaderSize;

    // The offset in the frame of the next message byte to send; starts right after the common header.
    private long _position = ProtocolConstants.FrameHeaderSize;

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

    public int FragmentSize { get; }

    public CallStreams? WhenWritten { get; init; }

    // Set by a Cancel, under the queue's lock (see OutboundQueue.AbortRequest): the Request sends no more, or its Cancel
    // follows its first fragment, which is then its last when the peer takes a Cancel to end it.
    public bool Aborted { get; set; }

    public bool CancelAfterFirstFragment { get; set; }

    public bool CancelEndsIt { get; set; }

    // Read under the queue's lock for a message in the queue: the writer moves the position before it puts it back.
    public bool Started => _position > ProtocolConstants.FrameHeaderSize;

    // What a Cancel with these would end.
    public bool IsRequestOf(uint callId, FrameFlags flags) =>
        _type == (byte)FrameType.Request
        && _callId == callId
        && (((FrameFlags)_flags ^ flags) & FrameFlags.ServerInitiated) == 0;

    // True when it was the last.
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
            uint messageSize = (uint)(_length - ProtocolConstants.FrameHeaderSize);
            BinaryPrimitives.WriteUInt32LittleEndian(header[ProtocolConstants.FrameHeaderSize..], messageSize);
        }
        else
        {
            // A call the server started keeps ServerInitiated on every fragment: the receiver keeps the two id spaces'
            // messages apart by it.
            header[4] = (byte)FrameType.Continuation;
            header[5] = (byte)((last ? FrameFlags.None : FrameFlags.MoreFragments) | ((FrameFlags)_flags & FrameFlags.ServerInitiated));
        }

        BinaryPrimitives.WriteUInt32LittleEndian(header[6..], _callId);
        output.Advance(headerSize);
        CopyTo(output, chunk);
        PayloadCopies.Written(chunk);
        _position += chunk;
        return last;
    }

    public void WriteCancel(IBufferWriter<byte> output) =>
        FrameWriter.WriteRaw(output, FrameType.Cancel, _callId, ReadOnlySpan<byte>.Empty, (FrameFlags)_flags & FrameFlags.ServerInitiated);

    // Returns each segment once read to its end.
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

            // A spliced segment is the caller's own memory, read here for the first and only time.
            int part = Math.Min(count, segment.Used - _offset);
            output.Write(segment.Memory.Span.Slice(_offset, part));
            _offset += part;
            count -= part;
        }
    }

    // Safe to call twice.
    public void Dispose()
    {
        BufferSegment? segment = _segment;
        _segment = null;
        _pool.ReturnChain(segment);
    }
}
