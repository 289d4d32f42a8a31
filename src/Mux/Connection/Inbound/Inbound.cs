using System.Buffers;
using System.IO.Pipelines;
using Mux.Diagnostics;
using Mux.Protocol;

namespace Mux.Connection;

/// <summary>
/// One loop splits every complete frame out of each read and routes it to its role; payloads stay slices of the pipe
/// buffer until a role copies what must outlive the loop. It runs inline on the socket's receive completion, so it never
/// blocks and never runs user code. Reader loop only, unless a member says otherwise.
/// </summary>

internal sealed partial class Inbound
{
    private readonly MuxConnection _connection;
    private readonly OutgoingCalls _outgoing;
    private readonly IncomingCalls _incoming;
    private readonly Outbound _outbound;
    private readonly PipeReader _input;
    private readonly TimeProvider _clock;
    private readonly int _maxFrameSize;
    private readonly bool _isServer;

    private Task? _loop;

    // Set once, by MuxConnection.CompleteHandshake after every peer setting it publishes; off the loop after Authenticate.
    private volatile bool _handshakeDone;

    // A graceful close reads and discards until the peer ends its stream: a socket closed with unread bytes is reset, which
    // drops what we sent last. Set by CloseCore right after the close: a loop that sees the close first loses only the drain.
    private volatile bool _drainInput;

    // Set while the loop waits for outbound room; read by the keepalive timer and tests.
    private volatile bool _waitingForRoom;

    // The stamps of the latest socket read and of the latest outbound room the loop waited for (the peer read what we sent:
    // proof of life as good as a read). Written by the loop; read by the keepalive timer.
    private long _lastReadAt;
    private long _roomAt;

    private long _framesReceived;
    private long _reads;
    private StageClock _stages;

    public Inbound(MuxConnection connection, PipeReader input, ConnectionSettings settings)
    {
        _connection = connection;
        _outgoing = connection.Outgoing;
        _incoming = connection.Incoming;
        _outbound = connection.Outbound;
        _input = input;
        _clock = settings.TimeProvider;
        _maxFrameSize = settings.MaxFrameSize;
        _maxMessageSize = settings.MaxMessageSize;
        _maxMessagesInProgress = settings.MaxConcurrentCalls; // A peer keeps at most that many calls outstanding.
        _isServer = settings.IsServer;
    }

    internal bool IsHandshakeDone => _handshakeDone;

    internal bool IsWaitingForRoom => _waitingForRoom;

    internal long FramesReceived => Volatile.Read(ref _framesReceived);

    internal long Reads => Volatile.Read(ref _reads);

    internal StageTimes Stages => StageTimes.OfReader(_stages.Read(_clock.TimestampFrequency));

    internal Task Completion => _loop ?? Task.CompletedTask;

    // When the bytes being parsed arrived, so a Request costs no clock read of its own. Reader loop only.
    internal long ArrivalTimestamp => _lastReadAt;

    internal long LastSignOfLife => Math.Max(Volatile.Read(ref _lastReadAt), Volatile.Read(ref _roomAt));

    internal void NoteRead(long readAt) => Volatile.Write(ref _lastReadAt, readAt);

    internal void Start() => _loop = ReadLoopAsync();

    // The caller has written every setting of the peer's before: this volatile write publishes them.
    internal void CompleteHandshake() => _handshakeDone = true;

    internal void SetDrain(bool drain) => _drainInput = drain;

    internal void StopDraining()
    {
        _drainInput = false;
        _input.CancelPendingRead();
    }

    internal void CancelPendingRead() => _input.CancelPendingRead();

    // A call the peer started (this side serves it): the peer's calls carry ServerInitiated when the peer is the server.
    private bool IsPeersCall(in Frame frame) => ((frame.Flags & FrameFlags.ServerInitiated) != 0) != _isServer;

    // A returned incomplete task pauses reading (backpressure).
    private ValueTask OnFrameAsync(Frame frame)
    {
        if (!_handshakeDone)
        {
            _connection.OnHandshakeFrame(frame);
            return ValueTask.CompletedTask;
        }

        switch (frame.Type)
        {
            case FrameType.Request when _outbound.IsFull:
            case FrameType.Ping when _outbound.IsFull:
                return OnFrameWhenRoomAsync(frame);
            case FrameType.Request:
                _incoming.OnRequest(RequirePeersCall(frame));
                break;
            case FrameType.Response:
            case FrameType.Error when frame.CallId != 0:
                _outgoing.OnAnswer(RequireOwnCall(frame));
                break;
            case FrameType.Error:
                _connection.OnConnectionError(frame);
                break;
            case FrameType.Cancel:
                _incoming.OnCancel(RequirePeersCall(frame).CallId);
                break;
            case FrameType.StreamEnd:
                _incoming.OnStreamEnd(RequirePeersCall(frame));
                break;
            case FrameType.StreamItem when IsPeersCall(frame):
                _incoming.OnStreamItem(frame);
                break;
            case FrameType.StreamItem:
                _outgoing.OnStreamItem(frame);
                break;
            case FrameType.StreamCredit when IsPeersCall(frame):
                _incoming.OnStreamCredit(frame.CallId, FrameReader.ReadUInt32(frame.Payload));
                break;
            case FrameType.StreamCredit:
                _outgoing.OnStreamCredit(frame.CallId, FrameReader.ReadUInt32(frame.Payload));
                break;
            case FrameType.Ping:
                _outbound.SendRawFrame(FrameType.Pong, frame.CallId, frame.Payload.ToArray());
                break;
            case FrameType.Pong:
                break; // Any byte read is proof of life (see MuxConnection.KeepAlive.cs).
            case FrameType.GoAway:
                _outgoing.OnGoAway(FrameReader.ReadUInt32(frame.Payload));
                break;
            default:
                throw new MuxProtocolException($"A {_connection.SideName} does not accept {frame.Type} frames after the handshake.");
        }

        return ValueTask.CompletedTask;
    }

    // A frame that makes this side send, while the peer does not read what we send: reading stops until it does, and TCP
    // pushes back on the peer, which then cannot make this side run calls or queue answers without bound.
    private async ValueTask OnFrameWhenRoomAsync(Frame frame)
    {
        _waitingForRoom = true;
        try
        {
            while (_outbound.IsFull && !_connection.IsClosed)
            {
                await _outbound.WaitForRoomAsync().ConfigureAwait(false);
            }
        }
        finally
        {
            _waitingForRoom = false;
        }

        // The peer is reading: the keepalive must not take it for dead (no read is stamped meanwhile).
        Volatile.Write(ref _roomAt, _clock.GetTimestamp());

        if (!_connection.IsClosed)
        {
            // The frame is still valid: the reader loop has not advanced past it.
            await (NeedsReassembly(frame) ? OnFragmentAsync(frame) : OnFrameAsync(frame)).ConfigureAwait(false);
        }
    }

    private Frame RequirePeersCall(in Frame frame) => IsPeersCall(frame) ? frame : throw new MuxProtocolException(
        $"The {_connection.PeerName} sent a {frame.Type} frame {(_isServer ? "with" : "without")} ServerInitiated (0x08): " +
        $"a {frame.Type} belongs to a call the {_connection.PeerName} started, and those carry it {(_isServer ? "never" : "always")}.");

    private Frame RequireOwnCall(in Frame frame) => !IsPeersCall(frame) ? frame : throw new MuxProtocolException(
        $"The {_connection.PeerName} sent a {frame.Type} frame {(_isServer ? "without" : "with")} ServerInitiated (0x08): " +
        $"it answers a call this {_connection.SideName} started, and those carry it {(_isServer ? "always" : "never")}.");

    // Before the handshake, the protocol's minimum, which a Hello always fits: a peer nobody has authenticated yet must not
    // make this side buffer a frame of MaxFrameSize until the handshake times out.
    private int HandshakeFrameLimit(in ReadOnlySequence<byte> buffer)
    {
        uint length = buffer.Length >= ProtocolConstants.LengthPrefixSize ? FrameReader.ReadUInt32(buffer) : 0;
        if (length > ProtocolConstants.MinimumMaxFrameSize)
        {
            throw new MuxProtocolException(
                $"The {_connection.PeerName} announced a frame of {length} bytes before the handshake; until the handshake completes, " +
                $"a frame is at most {ProtocolConstants.MinimumMaxFrameSize} bytes (a Hello always fits).");
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
                if (_connection.IsClosed)
                {
                    if (result.IsCanceled || !_drainInput)
                    {
                        break; // The close woke us up.
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
                long readStarted = _clock.GetTimestamp(); // stage clock: the read's buffer is in hand
                _reads++;
                NoteRead(readStarted);
                long framesBefore = _framesReceived;
                try
                {
                    while (!_connection.IsClosed
                        && FrameReader.TryRead(ref buffer, _handshakeDone ? _maxFrameSize : HandshakeFrameLimit(buffer), out Frame frame))
                    {
                        _framesReceived++;
                        ValueTask handled = NeedsReassembly(frame) ? OnFragmentAsync(frame) : OnFrameAsync(frame);
                        if (!handled.IsCompletedSuccessfully)
                        {
                            // Backpressure. The buffer stays valid: we have not advanced past it.
                            long pausedAt = _clock.GetTimestamp(); // stage clock: a backpressure wait is not reader work
                            await handled.ConfigureAwait(false);
                            readStarted += _clock.GetTimestamp() - pausedAt; // stage clock
                        }
                    }
                }
                finally
                {
                    // Consume what was parsed; everything else (a partial frame) was examined.
                    MuxTelemetry.OnRead(result.Buffer, buffer); // Before AdvanceTo frees the segments.
                    _input.AdvanceTo(buffer.Start, buffer.End);
                    MuxTelemetry.Reads.Add(1);
                    MuxTelemetry.FramesReceived.Add(_framesReceived - framesBefore);
                    _stages.Add(readStarted, _clock.GetTimestamp()); // stage clock: the read is done
                }

                if (result.IsCompleted)
                {
                    if (!buffer.IsEmpty)
                    {
                        throw new MuxProtocolException($"The connection ended in the middle of a frame ({buffer.Length} bytes of it arrived).");
                    }

                    // After this side's GoAway, the serving role keeps the connection open for the answers it promised
                    // (its drain closes it then); else it closes now, as RemoteClosed.
                    keepOpen = _incoming.OnPeerFinishedSending();
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
                // The close below must happen whatever fails here, else the calls would wait forever. The first fault is the reason.
                if (error is null)
                {
                    reason = MuxCloseReason.TransportError;
                    error = ex;
                }
            }
        }

        if (!keepOpen)
        {
            _connection.Close(reason, error);
        }
    }
}
