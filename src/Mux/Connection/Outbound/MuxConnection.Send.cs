using System.Buffers;
using System.Diagnostics.CodeAnalysis;
using Mux.Protocol;
using Mux.Streaming;

namespace Mux.Connection;

// Sending: what any thread does to put a frame on the connection. The frame is encoded on the
// sender's own thread (StagingBuffers), so serialization runs in parallel on every caller's core
// and a serializer exception fails only that call (nothing half-written reaches the queue). Then
//   - idle: the sender takes the writer role itself, writes and flushes: no thread hop for a lone call;
//   - busy: the sender queues the frame (OutboundQueue) and the role holder picks up everything
//     queued, so every frame that queued up while the previous flush ran goes out in one flush and
//     one send (MuxConnection.Writer.cs).
// A message over the fragment size goes to the queue's messages, one fragment per writer turn.
internal abstract partial class MuxConnection
{
    // What the senders have queued for the writer role: the one order point of this connection's
    // frames and fragments.
    private readonly OutboundQueue _queue = new();

    /// <summary>The most message bytes (everything after the common header) sent in one frame;
    /// larger messages go in fragments. Set by a subclass's constructor.</summary>
    protected int FragmentSize { get; init; } = 64 * 1024;

    /// <summary>The largest message the peer accepts, from its handshake; unlimited until then.</summary>
    private int PeerMaxMessageSize { get; set; } = int.MaxValue;

    /// <summary>Whether the peer announced <c>cancelEndsFragments</c> (this side always does): a
    /// Cancel then ends a Request still in fragments both ways, so no fragment of it is sent after
    /// its Cancel, and none is expected after one. Set from the peer's handshake on the reader loop,
    /// before any call.</summary>
    private bool PeerEndsFragmentsOnCancel { get; set; }

    /// <summary>Where the peer sets its limits ("MuxServerOptions" for a client's peer), named in
    /// the message of a call that fails for being over them.</summary>
    private string PeerOptionsName => IsServer ? nameof(MuxClientOptions) : nameof(MuxServerOptions);

    /// <summary>Bytes of frames queued for the writer role right now, for the queued-bytes gauge.</summary>
    internal int QueuedOutboundBytes => _queue.QueuedBytes;

    /// <summary>Frames queued for the writer role right now, and messages in fragments not yet
    /// written whole (hints, for tests that hold the writer).</summary>
    internal (int Frames, int Messages) QueuedOutbound => (_queue.QueuedFrames, _queue.QueuedMessages);

    /// <summary>
    /// Whether this connection is quiet enough for a sender to write and flush inline. Under load
    /// the answer is no even when the queue happens to be empty for a moment: the frame goes to
    /// the writer loop, which by the time it runs has collected the frames of the other calls in
    /// flight, so they share one flush and one socket send instead of one send each.
    /// </summary>
    private bool IsQuiet => Outgoing.Count + Incoming.Count <= 1;

    /// <summary>Encodes a frame with a MessagePack body and sends it. <paramref name="whenWritten"/>,
    /// when given, is told once the frame is queued whole, or once the writer has written the last
    /// fragment of a message sent in fragments (see <see cref="CallStreams.OnMessageWritten"/>). With
    /// <c>defer</c>, the frame is queued without waking the writer: it goes out with the next frame
    /// sent without <c>defer</c>, or at <see cref="SendQueuedFrames"/>, so a producer of many small
    /// frames (a stream) pays one flush for all of them.</summary>
    /// <exception cref="MuxConnectionException">The connection is closed.</exception>
    /// <exception cref="InvalidOperationException">The frame is larger than the peer accepts.</exception>
    /// <exception cref="MessagePack.MessagePackSerializationException">The body could not be serialized.</exception>
    /// <returns>The frame's size on the wire (the message's, when it goes in fragments).</returns>
    internal int SendFrame<TBody>(FrameType type, uint callId, uint methodId, ref TBody body, FrameFlags flags = FrameFlags.None, CallStreams? whenWritten = null, bool defer = false)
        where TBody : struct, IFrameBody
    {
        ThrowIfClosed();
        PooledBufferWriter staging = StagingBuffers.Rent();
        MessageBufferWriter? message = null;
        int length;
        try
        {
            if (callId != 0 && type is FrameType.Request or FrameType.Response or FrameType.Error)
            {
                // May be a large message: encoded into the staging buffer while it fits one segment,
                // then into pooled segments (MessageBufferWriter), never into one large array.
                message = MessageBufferWriter.ForCurrentThread(staging);
                long encoded = FrameWriter.Write(message, type, callId, methodId, ref body, flags);
                if (TrySendMessage(message, type, encoded, whenWritten))
                {
                    return (int)encoded;
                }

                // One frame after all: it is in the staging buffer now, as any small frame.
                message = null;
                length = staging.WrittenCount - ProtocolConstants.LengthPrefixSize;
            }
            else
            {
                // The peer's limit applies to the length field, which does not count its own 4 bytes.
                length = FrameWriter.Write(staging, type, callId, methodId, ref body, flags) - ProtocolConstants.LengthPrefixSize;
            }

            if (length > PeerMaxFrameSize)
            {
                ThrowFrameTooLarge(type, length);
            }
        }
        catch
        {
            // Never reuse a buffer that a failed serializer may have left in a strange state.
            message?.Discard();
            StagingBuffers.Discard(staging);
            throw;
        }

        Send(staging, defer);
        whenWritten?.OnMessageWritten();
        return length + ProtocolConstants.LengthPrefixSize;
    }

    /// <summary>
    /// Queues a just-encoded Request, Response or Error as a message in fragments when its message
    /// bytes are over the fragment size: its segments go to the queue's messages, and the writer
    /// sends one fragment per turn (<see cref="OutboundMessage"/>). Otherwise leaves the frame,
    /// whole, in the staging buffer <paramref name="message"/> started on, and returns false.
    /// </summary>
    private bool TrySendMessage(MessageBufferWriter message, FrameType type, long frameLength, CallStreams? whenWritten)
    {
        long messageLength = frameLength - ProtocolConstants.FrameHeaderSize; // After the common header.
        int fragmentSize = Math.Min(FragmentSize, PeerMaxFrameSize - ProtocolConstants.CommonHeaderSize - ProtocolConstants.FragmentTotalSize);
        if (messageLength <= fragmentSize)
        {
            message.End();
            return false;
        }

        if (messageLength > PeerMaxMessageSize)
        {
            ThrowMessageTooLarge(type, messageLength);
        }

        var outbound = new OutboundMessage(message.Detach(), frameLength, fragmentSize, BufferSegmentPool.Shared) { WhenWritten = whenWritten };
        if (_queue.EnqueueMessage(outbound))
        {
            WakeWriter();
        }
        else
        {
            // Closed since this sender's check, its last writer turn over: dropped, as it would
            // have been had it been queued a moment earlier.
            outbound.Dispose();
        }

        return true;
    }

    /// <summary>Sends a frame whose body is raw bytes (Cancel, Ping, Pong, GoAway, StreamCredit). A
    /// Cancel of a call whose Request is still being sent in fragments never goes out before that
    /// Request's first fragment, and ends the Request there if the peer takes a Cancel to end one
    /// (cancelEndsFragments; see OutboundQueue.AbortRequest).</summary>
    internal void SendRawFrame(FrameType type, uint callId, ReadOnlySpan<byte> body, FrameFlags flags = FrameFlags.None)
    {
        ThrowIfClosed();
        if (type == FrameType.Cancel && _queue.QueuedMessages != 0 && _queue.AbortRequest(callId, flags, PeerEndsFragmentsOnCancel))
        {
            return; // The Request carries its Cancel: the writer writes it after the first fragment.
        }

        PooledBufferWriter staging = StagingBuffers.Rent();
        FrameWriter.WriteRaw(staging, type, callId, body, flags);
        Send(staging);
    }

    private void Send(PooledBufferWriter staging, bool defer = false)
    {
        // IsQuiet sums per-core counters (a cache line per stripe); under load the queue or the
        // role answers first, so it is read only when the connection may really be idle.
        if (!defer && _queue.QueuedFrames == 0 && IsWriterFree && IsQuiet && TryAcquireWriter())
        {
            // Idle fast path: write our frame and whatever queued meanwhile, then flush ourselves.
            _output.Write(staging.WrittenSpan);
            StagingBuffers.ReleaseIfOversized(staging);
            FlushAndReleaseLocked(1 + DrainQueueIntoOutputLocked(), handOffRemainingWork: true);
            return;
        }

        // Busy: queue the frame and make sure someone will write it.
        if (_queue.Enqueue(staging))
        {
            StagingBuffers.HandOver();
        }
        else
        {
            StagingBuffers.ReleaseIfOversized(staging);
        }

        if (!defer)
        {
            WakeWriter();
        }

        // Else its sender calls SendQueuedFrames (or sends another frame) later.
    }

    /// <summary>Sends the frames queued with <c>defer</c>: flushes them here when the connection is
    /// quiet (one write and one flush for the lot), else wakes the writer loop.</summary>
    internal void SendQueuedFrames()
    {
        if (_queue.QueuedFrames == 0)
        {
            return; // Written already: a writer that ran meanwhile took them.
        }

        if (IsWriterFree && IsQuiet && TryAcquireWriter())
        {
            FlushAndReleaseLocked(DrainQueueIntoOutputLocked(), handOffRemainingWork: true);
            return;
        }

        WakeWriter();
    }

    /// <summary>Makes sure someone writes what was just queued: the role holder, or the writer
    /// loop this schedules when the role is free.</summary>
    private void WakeWriter()
    {
        // A full fence between publishing the frame and looking at the role: paired with the
        // releaser's Interlocked.Exchange, either it sees our frame or we see the role free.
        Interlocked.MemoryBarrier();
        if (TryAcquireWriter())
        {
            ScheduleDrain();
        }
    }

    private void ThrowIfClosed()
    {
        if (IsClosed)
        {
            throw CloseError;
        }
    }

    [DoesNotReturn]
    private void ThrowMessageTooLarge(FrameType type, long size) =>
        throw new MessageTooLargeException($"The {type} is {size} bytes, over the peer's MaxMessageSize of {PeerMaxMessageSize} bytes ({DescribeSize(PeerMaxMessageSize)}). Send a smaller message, or raise {PeerOptionsName}.MaxMessageSize on the receiving side.");

    /// <summary>"64 MiB", "64 KiB" or "1000 bytes", for messages about sizes.</summary>
    internal static string DescribeSize(long bytes) =>
        bytes % (1024 * 1024) == 0 ? $"{bytes / (1024 * 1024)} MiB" : bytes % 1024 == 0 ? $"{bytes / 1024} KiB" : $"{bytes} bytes";

    [DoesNotReturn]
    private void ThrowFrameTooLarge(FrameType type, int length) =>
        throw new FrameTooLargeException($"The {type} frame is {length} bytes (not counting its 4-byte length prefix), over the peer's maximum frame size of {PeerMaxFrameSize} bytes. Send smaller messages or raise MaxFrameSize on the receiving side.");
}
