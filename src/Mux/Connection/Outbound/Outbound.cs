using System.Buffers;
using System.Buffers.Binary;
using System.Diagnostics.CodeAnalysis;
using System.IO.Pipelines;
using Mux.Protocol;
using Mux.Streaming;

namespace Mux.Connection;

/// <summary>
/// A frame is encoded on its sender's thread, so serialization runs on every caller's core and a serializer that throws
/// fails only its call. A sender on a quiet connection takes the writer role and flushes itself (no thread hop for a lone
/// call); otherwise it queues the frame and the role holder writes everything queued meanwhile in one flush.
/// </summary>
internal sealed partial class Outbound
{
    private readonly MuxConnection _connection;
    private readonly PipeWriter _output;
    private readonly TimeProvider _clock;
    private readonly int _fragmentSize;
    private readonly int _maxQueuedBytes;

    // The one order point of this connection's frames and fragments.
    private readonly OutboundQueue _queue = new();

    // Completed when the writer takes the queue or the connection closes, waking all who wait for room. Installed by the
    // first waiter (CompareExchange); completed and cleared by the writer, the close, or a waiter that finds room.
    private TaskCompletionSource? _room;

    // The peer's limits, copied by OnPeerSettings before the handshake is published: read per frame.
    private PeerSettings _peer = PeerSettings.BeforeHandshake;

    public Outbound(MuxConnection connection, PipeWriter output, ConnectionSettings settings)
    {
        _connection = connection;
        _output = output;
        _clock = settings.TimeProvider;
        _fragmentSize = settings.FragmentSize;
        _maxQueuedBytes = settings.MaxOutboundBytes;

        // A server's frames still queued at a graceful close are the answers of the calls it drained.
        _sendsQueuedOnGracefulClose = settings.IsServer;
    }

    // The connection's own flag, never a copy: see FlushAndReleaseLocked for the fence it pairs with.
    private bool IsClosed => _connection.IsClosed;

    internal int QueuedBytes => _queue.QueuedBytes;

    // Messages count until written whole. Hints, for tests that hold the writer.
    internal (int Frames, int Messages) Queued => (_queue.QueuedFrames, _queue.QueuedMessages);

    // The peer is not reading what we send.
    internal bool IsFull => _queue.QueuedBytes >= _maxQueuedBytes;

    // Whether a sender may write and flush inline. Under load, no, even when the queue is empty for a moment: by the time
    // the writer loop runs it has collected the frames of the other calls in flight, which then share one flush and send.
    // The roles are read through the connection: they are made after this, to cache it.
    private bool IsQuiet => _connection.Outgoing.Count + _connection.Incoming.Count <= 1;

    internal void OnPeerSettings(in PeerSettings peer) => _peer = peer;

    /// <summary>Encodes a frame and sends it; returns its size on the wire. <paramref name="whenWritten"/> is told once the
    /// frame is queued whole, or its last fragment written. With <paramref name="defer"/>, the frame waits for the next one
    /// sent without, or <see cref="SendQueuedFrames"/>, so a producer of many small frames pays one flush.</summary>
    /// <exception cref="MuxConnectionException">The connection is closed.</exception>
    /// <exception cref="InvalidOperationException">The frame is larger than the peer accepts.</exception>
    internal int SendFrame<TBody>(
        FrameType type, uint callId, uint methodId, ref TBody body, FrameFlags flags = FrameFlags.None, CallStreams? whenWritten = null,
        bool defer = false)
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
                // May be a large message: never encoded into one large array.
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

            if (length > _peer.MaxFrameSize)
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

    /// <summary>For a call that waits for one of the peer's call slots: another thread sends it later. Checked against the
    /// peer's limits now, so it fails on its caller's thread, as a Request sent at once does.</summary>
    /// <exception cref="MuxConnectionException">The connection is closed.</exception>
    internal void EncodeRequest<TBody>(
        uint callId, uint methodId, ref TBody body, FrameFlags flags, PooledBufferWriter frame, out BufferSegment? message, out long length)
        where TBody : struct, IFrameBody
    {
        ThrowIfClosed();
        frame.Reset();
        MessageBufferWriter writer = MessageBufferWriter.ForCurrentThread(frame);
        try
        {
            length = FrameWriter.Write(writer, FrameType.Request, callId, methodId, ref body, flags);
            long messageLength = length - ProtocolConstants.FrameHeaderSize;
            if (messageLength <= FragmentSizeForPeer)
            {
                writer.End();
                message = null;
                if (length - ProtocolConstants.LengthPrefixSize > _peer.MaxFrameSize)
                {
                    ThrowFrameTooLarge(FrameType.Request, (int)(length - ProtocolConstants.LengthPrefixSize));
                }

                return;
            }

            if (messageLength > _peer.MaxMessageSize)
            {
                ThrowMessageTooLarge(FrameType.Request, messageLength);
            }

            message = writer.Detach();
        }
        catch
        {
            writer.Discard();
            frame.Reset();
            throw;
        }
    }

    /// <summary>Never written inline, since whoever frees a call slot sends it, the reader loop among them.
    /// <paramref name="message"/>'s segments are the writer's from now on.</summary>
    internal void SendEncodedRequest(PooledBufferWriter frame, BufferSegment? message, long length, CallStreams? whenWritten)
    {
        if (message is not null)
        {
            var outbound = new OutboundMessage(message, length, FragmentSizeForPeer, BufferSegmentPool.Shared) { WhenWritten = whenWritten };
            if (_queue.EnqueueMessage(outbound))
            {
                WakeWriter();
            }
            else
            {
                outbound.Dispose(); // Closed: dropped, as a frame queued a moment earlier would have been.
            }

            return;
        }

        _queue.EnqueueCopy(frame.WrittenSpan);
        WakeWriter();
        whenWritten?.OnMessageWritten();
    }

    // The message bytes a fragment carries: the fragment size, within what the peer's frames take.
    private int FragmentSizeForPeer =>
        Math.Min(_fragmentSize, _peer.MaxFrameSize - ProtocolConstants.CommonHeaderSize - ProtocolConstants.FragmentTotalSize);

    // False when the message fits one fragment: it is left whole in its staging buffer.
    private bool TrySendMessage(MessageBufferWriter message, FrameType type, long frameLength, CallStreams? whenWritten)
    {
        long messageLength = frameLength - ProtocolConstants.FrameHeaderSize; // After the common header.
        int fragmentSize = FragmentSizeForPeer;
        if (messageLength <= fragmentSize)
        {
            message.End();
            return false;
        }

        if (messageLength > _peer.MaxMessageSize)
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
            // Closed since this sender's check: dropped, as it would have been had it been queued a moment earlier.
            outbound.Dispose();
        }

        return true;
    }

    /// <summary>A Cancel of a Request still in fragments never goes out before its first fragment.</summary>
    internal void SendRawFrame(FrameType type, uint callId, ReadOnlySpan<byte> body, FrameFlags flags = FrameFlags.None)
    {
        ThrowIfClosed();
        if (type == FrameType.Cancel && _queue.QueuedMessages != 0 && _queue.AbortRequest(callId, flags, _peer.EndsFragmentsOnCancel))
        {
            return; // The Request carries its Cancel: the writer writes it after the first fragment.
        }

        PooledBufferWriter staging = StagingBuffers.Rent();
        FrameWriter.WriteRaw(staging, type, callId, body, flags);
        Send(staging);
    }

    // The Try senders are for frames nothing needs to know went (a Ping, credit, a refusal, a stream's end): a closed
    // connection, which says the rest, makes them return false.
    internal bool TrySendRawFrame(FrameType type, uint callId, ReadOnlySpan<byte> body, FrameFlags flags = FrameFlags.None)
    {
        try
        {
            SendRawFrame(type, callId, body, flags);
            return true;
        }
        catch (MuxConnectionException)
        {
            return false;
        }
    }

    internal bool TrySendFrame<TBody>(FrameType type, uint callId, ref TBody body, FrameFlags flags = FrameFlags.None)
        where TBody : struct, IFrameBody
    {
        try
        {
            SendFrame(type, callId, 0, ref body, flags);
            return true;
        }
        catch (MuxConnectionException)
        {
            return false;
        }
    }

    /// <summary>A message too long for the peer's frames is cut to 1,024 characters, which fit any frame: the peer must
    /// learn that the call or stream failed, or it waits forever.</summary>
    internal void TrySendError(FrameType type, uint callId, MuxStatusCode code, string message, string? remoteType, FrameFlags flags)
    {
        var body = new ErrorBody(code, message, remoteType);
        try
        {
            TrySendFrame(type, callId, ref body, flags);
        }
        catch (FrameTooLargeException)
        {
            var shortBody = new ErrorBody(code, message[..Math.Min(message.Length, 1024)], remoteType);
            TrySendFrame(type, callId, ref shortBody, flags);
        }
    }

    internal void SendStreamCredit(uint callId, FrameFlags idSpace, int count)
    {
        Span<byte> payload = stackalloc byte[ProtocolConstants.StreamCreditPayloadSize];
        BinaryPrimitives.WriteUInt32LittleEndian(payload, (uint)count);
        TrySendRawFrame(FrameType.StreamCredit, callId, payload, idSpace);
    }

    private void Send(PooledBufferWriter staging, bool defer = false)
    {
        // IsQuiet reads both roles' call counts, lines every caller and finisher writes; under load the queue or the role
        // answers first, so it is read only when the connection may really be idle.
        if (!defer && _queue.QueuedFrames == 0 && IsWriterFree && IsQuiet && TryAcquireWriter())
        {
            _output.Write(staging.WrittenSpan);
            StagingBuffers.ReleaseIfOversized(staging);
            FlushAndReleaseLocked(1 + DrainQueueIntoOutputLocked(), handOffRemainingWork: true);
            return;
        }

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
    }

    /// <summary>Sends the frames queued with <c>defer</c>: here when the connection is quiet, else by the writer loop.</summary>
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

    private void WakeWriter()
    {
        // A full fence between publishing the frame and looking at the role, paired with the release's
        // Interlocked.Exchange in FlushAndReleaseLocked: either it sees our frame or we see the role free.
        Interlocked.MemoryBarrier();
        if (TryAcquireWriter())
        {
            ScheduleDrain();
        }
    }

    /// <summary>Completes when the writer has taken the queue (only once the socket accepted the previous batch) or the
    /// connection closed.</summary>
    internal Task WaitForRoomAsync()
    {
        TaskCompletionSource? room = Volatile.Read(ref _room);
        if (room is null)
        {
            var created = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
            room = Interlocked.CompareExchange(ref _room, created, null) ?? created;
        }

        // Publishes the waiter before the checks below, paired with SignalRoom's exchange: either the writer that makes
        // room sees our waiter, or we see the room.
        Interlocked.MemoryBarrier();
        if (!IsFull || IsClosed)
        {
            SignalRoom(); // Completes ours (or a newer one, ours having been completed already).
        }

        return room.Task;
    }

    internal void SignalRoom() => Interlocked.Exchange(ref _room, null)?.TrySetResult();

    private void ThrowIfClosed()
    {
        if (IsClosed)
        {
            throw _connection.CloseError;
        }
    }

    [DoesNotReturn]
    private void ThrowMessageTooLarge(FrameType type, long size) =>
        throw new MessageTooLargeException(
            $"The {type} is {size} bytes, over the peer's MaxMessageSize of {_peer.MaxMessageSize} bytes " +
            $"({MuxConnection.DescribeSize(_peer.MaxMessageSize)}). Send a smaller message, or raise " +
            $"{(_connection.IsServer ? nameof(MuxClientOptions) : nameof(MuxServerOptions))}.MaxMessageSize on the receiving side.");

    [DoesNotReturn]
    private void ThrowFrameTooLarge(FrameType type, int length) =>
        throw new FrameTooLargeException(
            $"The {type} frame is {length} bytes (not counting its 4-byte length prefix), over the peer's maximum frame size of " +
            $"{_peer.MaxFrameSize} bytes. Send smaller messages or raise MaxFrameSize on the receiving side.");
}
