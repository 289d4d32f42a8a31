using System.Buffers;
using System.Buffers.Binary;
using Mux.Protocol;

namespace Mux.Connection;

/// <summary>
/// A message too large for one fragment, queued for the writer: the whole frame as FrameWriter
/// encoded it (in the staging buffer its sender handed over), sent as fragments of at most
/// <see cref="FragmentSize"/> message bytes, one per writer turn (docs/protocol.md, *Fragments*).
/// Created by the sender; after that only the writer role holder touches it.
/// </summary>
internal sealed class OutboundMessage : IDisposable
{
    private readonly PooledBufferWriter _frame;

    // The offset in _frame of the next message byte to send; starts right after the common header.
    private int _position = ProtocolConstants.FrameHeaderSize;

    public OutboundMessage(PooledBufferWriter frame, int fragmentSize)
    {
        _frame = frame;
        FragmentSize = fragmentSize;
    }

    /// <summary>The most message bytes one fragment carries.</summary>
    public int FragmentSize { get; }

    /// <summary>Told by the writer once the last fragment has been written; null for most messages.</summary>
    public IMessageWrittenListener? WhenWritten { get; init; }

    /// <summary>Its call was cancelled while the message was being sent (a Request, with
    /// cancelEndsFragments in force): the writer sends no more of it. Written and read under the
    /// connection's outbound lock.</summary>
    public bool Aborted { get; set; }

    /// <summary>Whether a fragment of it has been written. Read under the connection's outbound
    /// lock for a message in its queue: the writer moves the position before it puts the message
    /// back under that lock.</summary>
    public bool Started => _position > ProtocolConstants.FrameHeaderSize;

    /// <summary>Whether this is the Request of call <paramref name="callId"/> in the id space of
    /// <paramref name="flags"/> (ServerInitiated or not): what a Cancel with those would end.</summary>
    public bool IsRequestOf(uint callId, FrameFlags flags)
    {
        ReadOnlySpan<byte> header = _frame.WrittenSpan;
        return header[4] == (byte)FrameType.Request
            && BinaryPrimitives.ReadUInt32LittleEndian(header[6..]) == callId
            && (((FrameFlags)header[5] ^ flags) & FrameFlags.ServerInitiated) == 0;
    }

    /// <summary>Writes the next fragment into <paramref name="output"/>. Returns true when it was the last.</summary>
    public bool WriteNextFragment(IBufferWriter<byte> output)
    {
        ReadOnlySpan<byte> whole = _frame.WrittenSpan;
        bool first = _position == ProtocolConstants.FrameHeaderSize;
        int remaining = whole.Length - _position;
        int chunk = Math.Min(remaining, FragmentSize);
        bool last = chunk == remaining;

        int headerSize = ProtocolConstants.FrameHeaderSize + (first ? ProtocolConstants.FragmentTotalSize : 0);
        Span<byte> header = output.GetSpan(headerSize);
        BinaryPrimitives.WriteUInt32LittleEndian(header, (uint)(headerSize - ProtocolConstants.LengthPrefixSize + chunk));
        if (first)
        {
            // The message's own type and flags, plus MoreFragments, then its total size.
            header[4] = whole[4];
            header[5] = (byte)(whole[5] | (byte)FrameFlags.MoreFragments);
            BinaryPrimitives.WriteUInt32LittleEndian(header[ProtocolConstants.FrameHeaderSize..], (uint)(whole.Length - ProtocolConstants.FrameHeaderSize));
        }
        else
        {
            // A call the server started keeps ServerInitiated on every fragment: the receiver keeps
            // the two id spaces' messages apart by it.
            header[4] = (byte)FrameType.Continuation;
            header[5] = (byte)((last ? FrameFlags.None : FrameFlags.MoreFragments) | ((FrameFlags)whole[5] & FrameFlags.ServerInitiated));
        }

        whole.Slice(6, 4).CopyTo(header[6..]); // The call id.
        output.Advance(headerSize);
        output.Write(whole.Slice(_position, chunk));
        _position += chunk;
        return last;
    }

    /// <summary>Returns the frame's buffer to the pool.</summary>
    public void Dispose() => _frame.Dispose();
}
