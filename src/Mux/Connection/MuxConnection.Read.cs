using System.Buffers;
using System.IO.Pipelines;
using Mux.Diagnostics;
using Mux.Protocol;

namespace Mux.Connection;

// The read side: one loop per connection. It only splits frames and routes each one to the role
// it belongs to; payloads are slices of the pipe buffer until a role copies what must outlive the
// loop. It runs inline on the socket's receive completion (see SocketConnection), so it must never
// block and never run user code.
internal abstract partial class MuxConnection
{
    // Statistics, written only by the reader loop.
    private long _framesReceived;
    private long _reads;

    /// <summary>The frames of the handshake (Hello, HelloAck, or a refusal), before any other is
    /// accepted. Reader loop only.</summary>
    protected abstract void OnHandshakeFrame(in Frame frame);

    /// <summary>A connection-level Error (call id 0) after the handshake: a peer that refuses or
    /// closes the connection. Only a server sends one.</summary>
    protected virtual void OnConnectionError(in Frame frame) =>
        throw new MuxProtocolException($"A {SideName} does not accept Error frames with call id 0 after the handshake.");

    /// <summary>Whether a frame belongs to a call the peer started (this side serves it) rather
    /// than one this side started: the peer's calls carry ServerInitiated when the peer is the server.</summary>
    private bool IsPeersCall(in Frame frame) => ((frame.Flags & FrameFlags.ServerInitiated) != 0) != IsServer;

    /// <summary>Routes one frame to the role it belongs to. Must not block: anything slow goes to
    /// the thread pool. A returned incomplete task pauses reading (backpressure).</summary>
    private ValueTask OnFrameAsync(Frame frame)
    {
        if (!IsHandshakeDone)
        {
            OnHandshakeFrame(frame);
            return ValueTask.CompletedTask;
        }

        switch (frame.Type)
        {
            case FrameType.Request when IsOutboundFull:
            case FrameType.Ping when IsOutboundFull:
                return OnFrameWhenOutboundRoomAsync(frame);
            case FrameType.Request:
                Incoming.OnRequest(RequirePeersCall(frame));
                break;
            case FrameType.Response:
            case FrameType.Error when frame.CallId != 0:
                Outgoing.OnAnswer(RequireOwnCall(frame));
                break;
            case FrameType.Error:
                OnConnectionError(frame);
                break;
            case FrameType.Cancel:
                Incoming.OnCancel(RequirePeersCall(frame).CallId);
                break;
            case FrameType.StreamEnd:
                Incoming.OnStreamEnd(RequirePeersCall(frame));
                break;
            case FrameType.StreamItem when IsPeersCall(frame):
                Incoming.OnStreamItem(frame);
                break;
            case FrameType.StreamItem:
                Outgoing.OnStreamItem(frame);
                break;
            case FrameType.StreamCredit when IsPeersCall(frame):
                Incoming.OnStreamCredit(frame.CallId, FrameReader.ReadUInt32(frame.Payload));
                break;
            case FrameType.StreamCredit:
                Outgoing.OnStreamCredit(frame.CallId, FrameReader.ReadUInt32(frame.Payload));
                break;
            case FrameType.Ping:
                SendRawFrame(FrameType.Pong, frame.CallId, frame.Payload.ToArray());
                break;
            case FrameType.Pong:
                break; // Any byte read is proof of life (see MuxConnection.KeepAlive.cs).
            case FrameType.GoAway:
                Outgoing.OnGoAway(FrameReader.ReadUInt32(frame.Payload));
                break;
            default:
                throw new MuxProtocolException($"A {SideName} does not accept {frame.Type} frames after the handshake.");
        }

        return ValueTask.CompletedTask;
    }

    /// <summary>Whether the reader loop has stopped reading because the peer does not read what this
    /// side sends (for tests and diagnostics). Written by the reader loop only.</summary>
    internal volatile bool IsWaitingForOutboundRoom;

    /// <summary>Handles a frame that would make this side send (a Request, which runs a handler
    /// that answers; a Ping; a Cancel of a Request still arriving in fragments) while the peer is
    /// not reading what we send (the outbound queue is full): reading stops until the socket takes
    /// what is queued, and TCP pushes back on the peer, so that it cannot make this side run calls
    /// or queue answers without bound. Not even a refusal is sent meanwhile.</summary>
    private async ValueTask OnFrameWhenOutboundRoomAsync(Frame frame)
    {
        IsWaitingForOutboundRoom = true;
        try
        {
            while (IsOutboundFull && !IsClosed)
            {
                await WaitForOutboundRoomAsync().ConfigureAwait(false);
            }
        }
        finally
        {
            IsWaitingForOutboundRoom = false;
        }

        NoteRoom(); // The peer is reading: the keepalive must not take it for dead (no read is stamped meanwhile).

        if (!IsClosed)
        {
            // The frame is still valid: the reader loop has not advanced past it.
            await (NeedsReassembly(frame) ? OnFragmentAsync(frame) : OnFrameAsync(frame)).ConfigureAwait(false);
        }
    }

    /// <summary>The frame, if it belongs to a call the peer started (Request, Cancel, StreamEnd);
    /// else the peer broke the protocol.</summary>
    private Frame RequirePeersCall(in Frame frame) => IsPeersCall(frame) ? frame : throw new MuxProtocolException(
        $"The {PeerName} sent a {frame.Type} frame {(IsServer ? "with" : "without")} ServerInitiated (0x08): a {frame.Type} belongs to a call the {PeerName} started, and those carry it {(IsServer ? "never" : "always")}.");

    /// <summary>The frame, if it answers a call this side started (Response, Error); else the peer
    /// broke the protocol.</summary>
    private Frame RequireOwnCall(in Frame frame) => !IsPeersCall(frame) ? frame : throw new MuxProtocolException(
        $"The {PeerName} sent a {frame.Type} frame {(IsServer ? "without" : "with")} ServerInitiated (0x08): it answers a call this {SideName} started, and those carry it {(IsServer ? "always" : "never")}.");

    /// <summary>The largest frame the reader takes before the handshake has completed: the protocol's
    /// minimum, which a Hello always fits (docs/protocol.md, *Handshake*), so that a peer nobody has
    /// authenticated yet cannot make this side buffer a frame of MaxFrameSize until the handshake
    /// times out. Throws, saying so, for a frame that announces more.</summary>
    private int HandshakeFrameLimit(in ReadOnlySequence<byte> buffer)
    {
        uint length = buffer.Length >= ProtocolConstants.LengthPrefixSize ? FrameReader.ReadUInt32(buffer) : 0;
        if (length > ProtocolConstants.MinimumMaxFrameSize)
        {
            throw new MuxProtocolException($"The {PeerName} announced a frame of {length} bytes before the handshake; until the handshake completes, a frame is at most {ProtocolConstants.MinimumMaxFrameSize} bytes (a Hello always fits).");
        }

        return ProtocolConstants.MinimumMaxFrameSize;
    }

    private async Task ReadLoopAsync()
    {
        MuxCloseReason reason = MuxCloseReason.RemoteClosed;
        Exception? error = null;
        bool keepOpen = false;
        try
        {
            while (true)
            {
                ReadResult result = await _input.ReadAsync().ConfigureAwait(false);
                if (IsClosed)
                {
                    if (result.IsCanceled || !_drainInput)
                    {
                        break; // Close() woke us up.
                    }

                    // A graceful close: discard what the peer still sends until it closes too.
                    _input.AdvanceTo(result.Buffer.End);
                    if (result.IsCompleted)
                    {
                        break;
                    }

                    continue;
                }

                if (result.IsCanceled)
                {
                    break;
                }

                ReadOnlySequence<byte> buffer = result.Buffer;
                long readStarted = TimeProvider.GetTimestamp(); // stage clock: the read's buffer is in hand
                _reads++;
                NoteRead(readStarted);
                long framesBefore = _framesReceived;
                try
                {
                    while (!IsClosed && FrameReader.TryRead(ref buffer, IsHandshakeDone ? MaxFrameSize : HandshakeFrameLimit(buffer), out Frame frame))
                    {
                        _framesReceived++;
                        ValueTask handled = NeedsReassembly(frame) ? OnFragmentAsync(frame) : OnFrameAsync(frame);
                        if (!handled.IsCompletedSuccessfully)
                        {
                            // Backpressure: stop reading until the subclass has room again. The
                            // buffer stays valid because we have not advanced past it yet.
                            long pausedAt = TimeProvider.GetTimestamp(); // stage clock: a backpressure wait is not reader work
                            await handled.ConfigureAwait(false);
                            readStarted += TimeProvider.GetTimestamp() - pausedAt; // stage clock
                        }
                    }
                }
                finally
                {
                    // Consume what was parsed; everything else (a partial frame) was examined.
                    MuxTelemetry.OnRead(result.Buffer, buffer); // Before AdvanceTo frees the segments.
                    _input.AdvanceTo(buffer.Start, buffer.End);
                    MuxMetrics.Reads.Add(1);
                    MuxMetrics.FramesReceived.Add(_framesReceived - framesBefore);
                    _stages.AddReader(readStarted, TimeProvider.GetTimestamp()); // stage clock: the read is done
                }

                if (result.IsCompleted)
                {
                    if (!buffer.IsEmpty)
                    {
                        throw new MuxProtocolException($"The connection ended in the middle of a frame ({buffer.Length} bytes of it arrived).");
                    }

                    // After this side's GoAway, the serving role keeps the connection open for the answers
                    // it promised (its drain closes it then); else it closes now, as RemoteClosed.
                    keepOpen = Incoming.OnPeerFinishedSending();
                    break;
                }
            }
        }
        catch (MuxProtocolException ex)
        {
            reason = MuxCloseReason.ProtocolError;
            error = ex;
        }
        catch (Exception ex)
        {
            reason = MuxCloseReason.TransportError;
            error = ex;
        }
        finally
        {
            try
            {
                ReleaseReassemblies();
                await _input.CompleteAsync().ConfigureAwait(false);
            }
            catch (Exception ex)
            {
                // The close below must happen whatever fails here (an application's pipe whose
                // stream throws as it is disposed, say), else the calls on this connection would
                // wait forever on one that reads nothing more. The first fault is the reason.
                if (error is null)
                {
                    reason = MuxCloseReason.TransportError;
                    error = ex;
                }
            }
        }

        if (!keepOpen)
        {
            Close(reason, error);
        }
    }
}
