using System.Buffers;
using System.Buffers.Binary;
using System.Collections.Frozen;
using System.Diagnostics.CodeAnalysis;
using System.Runtime.CompilerServices;
using MessagePack;
using Microsoft.Extensions.Logging;
using Mux.Connection;
using Mux.Protocol;
using Mux.Serialization;
using Mux.Transport;

namespace Mux.Server;

/// <summary>
/// The server end of a connection: answers the handshake, dispatches each request to the thread
/// pool, caps the calls running at once (by pausing the reader, never by dropping), relays Cancel
/// frames to handlers, and drains with GoAway on shutdown.
/// </summary>
internal sealed partial class ServerConnection : MuxConnection
{
    private readonly FrozenDictionary<uint, ServerMethod> _methods;
    private readonly MuxServerOptions _options;

    // One slot per call allowed to run at once. Taken by the reader loop; given back by a call just
    // before its answer is queued, so a client that sends its next request on reading the answer
    // always finds the slot free.
    private readonly CallSlots _callSlots;

    // Cancelled on close, to end the handshake timer.
    private readonly CancellationTokenSource _closing = new();

    // Running calls by id, for Cancel frames and for cancelling everything on close. Lock-free in
    // steady state; the reader loop is its only adder.
    private readonly ServerCallTable _calls;

    // Finished calls kept for the next requests (rented by the reader loop, returned by finishers).
    private readonly ServerCallPool _callPool = new();

    // Taken when GoAway begins, and by the reader loop only after GoAway has begun: requests in
    // steady state never take it.
    private readonly Lock _callsLock = new();

    // The highest call id of any Request read so far. Written only by the reader loop; read by
    // DrainAndCloseAsync to choose the id GoAway carries.
    private volatile uint _highestReceivedCallId;

    // Whether GoAway was sent, and the id it carried: the server serves every call with an id up
    // to it (including ones that arrive later: ids may reach the wire slightly out of order) and
    // none above it. Written under _callsLock, and the id read only under it. A call being dispatched at the same
    // moment is on one side of the line or the other, never both: the reader loop writes
    // _highestReceivedCallId, then (after a full fence) reads _goingAway; DrainAndCloseAsync writes
    // _goingAway, then (after a full fence) reads _highestReceivedCallId, so one sees the other.
    private volatile bool _goingAway;
    private uint _goAwayCallId;

    // Whether the client has ended its stream (it sends nothing more) while we were draining.
    // Written under _callsLock once _goingAway is set; read by finishing calls without the lock.
    private volatile bool _peerFinished;

    // Completed when GoAway has been sent, no call is running and the client has ended its stream
    // (or the connection closed for another reason).
    private readonly TaskCompletionSource _drained = new(TaskCreationOptions.RunContinuationsAsynchronously);

    // Set by the reader loop when the handshake succeeds.
    private volatile bool _handshakeDone;

    /// <summary>The options arguments are read and results written with: the server's, with generated
    /// formatters consulted first and untrusted-data protections on. Immutable.</summary>
    public MessagePackSerializerOptions SerializerOptions { get; }

    public ServerConnection(IMuxTransport transport, FrozenDictionary<uint, ServerMethod> methods, MuxServerOptions options, ILogger logger, string name)
        : base(transport, options.MaxFrameSize, logger, name)
    {
        _methods = methods;
        _options = options;
        SerializerOptions = MuxSerializerOptions.ForServer(options.SerializerOptions);
        _callSlots = new CallSlots(options.MaxConcurrentCallsPerConnection);
        MaxQueuedOutboundBytes = options.MaxOutboundBytesPerConnection;
        StreamWindow = options.StreamWindow;
        MaxMessageSize = options.MaxMessageSize;
        PeerOptionsName = nameof(MuxClientOptions);
        FragmentSize = options.FragmentSize;
        MaxMessagesInProgress = options.MaxConcurrentCallsPerConnection; // A client keeps at most that many calls outstanding.
        _calls = new ServerCallTable(options.MaxConcurrentCallsPerConnection);
        TimeProvider = options.TimeProvider;
        KeepAliveInterval = options.KeepAliveInterval;
        KeepAliveTimeout = options.KeepAliveTimeout;
        _closesWhenIdle = options.IdleTimeout != Timeout.InfiniteTimeSpan;
        _acceptedAt = TimeProvider.GetTimestamp();
        _idleSince = _acceptedAt;
        PropagatesCallContext = options.EnableCallContextPropagation;
        if (PropagatesCallContext)
        {
            MuxCallContext.EnablePropagation();
        }
    }

    /// <summary>Whether handlers run with MuxCallContext.Current set
    /// (MuxServerOptions.EnableCallContextPropagation). Immutable.</summary>
    internal bool PropagatesCallContext { get; }

    // Whether MuxServerOptions.IdleTimeout is on. Immutable.
    private readonly bool _closesWhenIdle;

    // TimeProvider timestamp of when the connection was accepted (this object was made): the
    // handshake timeout counts from it. Immutable.
    private readonly long _acceptedAt;

    // TimeProvider timestamp of when the connection last became free of calls (or opened); kept
    // only when _closesWhenIdle. Written by Retire when the last running call finishes; read by
    // the connection's timer (CheckDeadlines).
    private long _idleSince;

    /// <summary>The idle close (<see cref="MuxServerOptions.IdleTimeout"/>), on the connection's
    /// timer: a connection that has held no call for that long is told GoAway and drained.</summary>
    protected override TimeSpan CheckDeadlines(long now)
    {
        if (!_closesWhenIdle || _goingAway)
        {
            return Timeout.InfiniteTimeSpan;
        }

        if (_calls.Count > 0)
        {
            return _options.IdleTimeout; // Busy: Retire stamps the moment it becomes idle.
        }

        TimeSpan idle = TimeProvider.GetElapsedTime(Volatile.Read(ref _idleSince), now);
        if (idle < _options.IdleTimeout)
        {
            return _options.IdleTimeout - idle;
        }

        // A request racing with this is on one side of GoAway's id or the other, as on shutdown.
        _ = CloseIdleAsync();
        return Timeout.InfiniteTimeSpan;
    }

    private async Task CloseIdleAsync()
    {
        using CancellationTokenSource patience = _options.ShutdownTimeout == Timeout.InfiniteTimeSpan
            ? new CancellationTokenSource()
            : new CancellationTokenSource(_options.ShutdownTimeout, TimeProvider);
        await DrainAndCloseAsync(patience.Token, MuxCloseReason.IdleTimeout).ConfigureAwait(false);
    }

    public int RunningCalls => _calls.Count;

    // A lone call answering (or connection-level frames): write inline; otherwise batch.
    protected override bool IsQuiet => _calls.Count <= 1;

    /// <summary>A drain ends when the last call has queued its response, not when the response
    /// has been written: the close must still send it.</summary>
    protected override bool SendsQueuedFramesOnGracefulClose => true;

    public void Start()
    {
        StartLoops();
        if (_options.HandshakeTimeout != Timeout.InfiniteTimeSpan)
        {
            _ = EnforceHandshakeTimeoutAsync();
        }
    }

    private async Task EnforceHandshakeTimeoutAsync()
    {
        // On the server's clock, so that a fake one moves it. Counted from the accept, not from
        // here: the server lists the connection a moment before it starts it.
        TimeSpan waited = TimeProvider.GetElapsedTime(_acceptedAt);
        TimeSpan remaining = waited < _options.HandshakeTimeout ? _options.HandshakeTimeout - waited : TimeSpan.Zero;
        try
        {
            await Task.Delay(remaining, TimeProvider, _closing.Token).ConfigureAwait(false);
        }
        catch (OperationCanceledException)
        {
            return; // Closed first.
        }

        if (!_handshakeDone)
        {
            Close(MuxCloseReason.HandshakeTimeout, new TimeoutException($"The client did not complete the handshake within {DurationText.Format(_options.HandshakeTimeout)} (MuxServerOptions.HandshakeTimeout)."));
        }
    }

    protected override ValueTask OnFrameAsync(Frame frame)
    {
        if (!_handshakeDone)
        {
            OnHandshake(frame);
            return ValueTask.CompletedTask;
        }

        if (frame.Type is FrameType.Response or FrameType.Error || (frame.Flags & FrameFlags.ServerInitiated) != 0)
        {
            OnClientCallFrame(frame); // The client's side of a call this server started.
            return ValueTask.CompletedTask;
        }

        switch (frame.Type)
        {
            case FrameType.Request:
                if (IsOutboundFull)
                {
                    // The client is not reading our answers: run nothing more for it (not even a
                    // refusal) until the socket takes what is queued. TCP pushes back on it.
                    return WaitForRoomThenReadRequestAsync(frame);
                }

                if (frame.CallId > _highestReceivedCallId)
                {
                    _highestReceivedCallId = frame.CallId;
                }

                if (!_callSlots.TryTake())
                {
                    RefuseOverLimit(frame);
                    break;
                }

                Dispatch(frame);
                break;
            case FrameType.Cancel:
                OnCancel(frame.CallId);
                break;
            case FrameType.StreamItem:
                // Like Cancel: a call found cannot be reused before this thread dispatches again.
                _calls.Find(frame.CallId)?.OnStreamItem(frame.Payload);
                break;
            case FrameType.StreamEnd:
                _calls.Find(frame.CallId)?.OnStreamEnd(frame.Payload);
                break;
            case FrameType.StreamCredit:
                _calls.Find(frame.CallId)?.OnStreamCredit(ReadStreamCredit(frame.Payload));
                break;
            case FrameType.Ping:
                SendRawFrame(FrameType.Pong, frame.CallId, frame.Payload.ToArray());
                break;
            case FrameType.Pong:
                break;
            default:
                throw new MuxProtocolException($"A server does not accept {frame.Type} frames after the handshake.");
        }

        return ValueTask.CompletedTask;
    }

    private async ValueTask WaitForRoomThenReadRequestAsync(Frame frame)
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

        if (!IsClosed)
        {
            // The frame is still valid: the reader loop has not advanced past it.
            await OnFrameAsync(frame).ConfigureAwait(false);
        }
    }

    /// <summary>Whether the reader loop has stopped taking requests because the client does not
    /// read the answers (for tests and diagnostics). Written by the reader loop only.</summary>
    internal volatile bool IsWaitingForOutboundRoom;

    /// <summary>Whether GoAway was sent: the connection is draining (for tests and diagnostics).</summary>
    internal bool IsGoingAway => _goingAway;

    /// <summary>The highest call id received so far (for tests and diagnostics).</summary>
    internal uint HighestReceivedCallId => _highestReceivedCallId;

    /// <summary>A request beyond the cap this server advertised in its HelloAck (a Mux client
    /// waits for a slot instead of sending it): answered with an Error, the connection stays up.</summary>
    private void RefuseOverLimit(in Frame frame)
    {
        SendError(frame.CallId, MuxStatusCode.TooManyCalls, $"The server did not run {MuxServiceRegistry.GetMethodDisplayName(frame.MethodId)}: this connection already runs {_options.MaxConcurrentCallsPerConnection} calls, the most it allows (MuxServerOptions.MaxConcurrentCallsPerConnection, advertised in the handshake). A client must wait for an answer before sending more.", null);
    }

    /// <summary>A request over MaxMessageSize (from a client that ignored the limit this server
    /// announced): answered at once with MessageTooLarge and not run; the rest of it is skipped as
    /// it arrives and the connection stays up.</summary>
    protected override void OnMessageTooLarge(in Frame first)
    {
        if (!_handshakeDone)
        {
            throw new MuxProtocolException($"The first frame must be Hello; the client sent {first.Type}.");
        }

        if (first.Type is FrameType.Response or FrameType.Error || (first.Flags & FrameFlags.ServerInitiated) != 0)
        {
            OnClientCallTooLarge(first); // The client's answer to a call this server started.
            return;
        }

        if (first.Type != FrameType.Request)
        {
            throw new MuxProtocolException($"A server does not accept {first.Type} frames after the handshake.");
        }

        if (first.CallId > _highestReceivedCallId)
        {
            _highestReceivedCallId = first.CallId;
        }

        SendError(first.CallId, MuxStatusCode.MessageTooLarge, $"The request to {MuxServiceRegistry.GetMethodDisplayName(first.MethodId)} is {first.MessageSize} bytes, over this server's MaxMessageSize of {_options.MaxMessageSize} bytes ({DescribeSize(_options.MaxMessageSize)}, MuxServerOptions.MaxMessageSize); it was not run. Send a smaller argument, or raise MuxServerOptions.MaxMessageSize.", null);
    }

    /// <summary>Gives back the slot a call held (see <see cref="MuxServerCall.ReleaseSlot"/>).</summary>
    internal override void ReleaseCallSlot() => _callSlots.Release();

    /// <summary>Starts a call on the thread pool. Caller has taken a slot for it.</summary>
    private void Dispatch(Frame frame)
    {
        if (!_methods.TryGetValue(frame.MethodId, out ServerMethod? method))
        {
            _callSlots.Release();
            ServerLog.UnknownMethod(Logger, Name, MuxServiceRegistry.GetMethodDisplayName(frame.MethodId));
            SendError(frame.CallId, MuxStatusCode.UnknownMethod, $"The server has no method {DescribeUnknownMethod(frame.MethodId)}. The client and server contracts differ, or the service was not added to the server.", null);
            return;
        }

        long deadline = long.MaxValue;
        if (frame.HasDeadline)
        {
            if (frame.RemainingMilliseconds == 0)
            {
                RefuseExpired(frame.CallId, method);
                return;
            }

            deadline = DeadlineHeader.ToTimestamp(TimeProvider, ArrivalTimestamp, frame.RemainingMilliseconds);
        }

        MuxServerCall call = _callPool.TryRent() ?? new MuxServerCall(this, SerializerOptions);
        call.Start(frame.CallId, method, frame.Payload, deadline);

        // Counted as running before _goingAway is read (TryAdd's increment is the full fence that
        // pairs with DrainAndCloseAsync), so a drain cannot find the connection idle meanwhile.
        if (!_calls.TryAdd(call))
        {
            ThrowCallIdReused(frame.CallId);
        }

        if (_goingAway && IsAboveGoAway(frame.CallId))
        {
            // Above the id GoAway carried: the client fails this call itself ("not run, safe to
            // retry"), so it must not run.
            call.Abandon();
            Retire(call);
            return;
        }

        call.StartTelemetry(frame.TraceContext);
        ThreadPool.UnsafeQueueUserWorkItem(call, preferLocal: false);
    }

    /// <summary>A request whose caller's time was up before it arrived (its deadline header says
    /// 0 ms): running it would only waste the server, as nobody waits for the answer.</summary>
    [MethodImpl(MethodImplOptions.NoInlining)]
    private void RefuseExpired(uint callId, ServerMethod method)
    {
        _callSlots.Release();
        SendError(callId, MuxStatusCode.DeadlineExceeded, $"The server did not run {method.Name}: the caller's deadline had passed when the request arrived.", null);
    }

    private bool IsAboveGoAway(uint callId)
    {
        lock (_callsLock)
        {
            return callId > _goAwayCallId;
        }
    }

    [DoesNotReturn]
    private static void ThrowCallIdReused(uint callId) =>
        throw new MuxProtocolException($"The client reused call id {callId} while that call was still running.");

    /// <summary>"IService.Method (id 0x…)" when the contract is loaded here, else "with id 0x…".</summary>
    private static string DescribeUnknownMethod(uint methodId)
    {
        string name = MuxServiceRegistry.GetMethodDisplayName(methodId);
        return name.StartsWith("method ", StringComparison.Ordinal) ? $"with id 0x{methodId:x8}" : $"{name} (id 0x{methodId:x8})";
    }

    private void OnCancel(uint callId)
    {
        // Unknown ids are calls that already finished. A call found may finish meanwhile, but it
        // cannot be reused for another request before this (reader loop) thread dispatches again.
        _calls.Find(callId)?.RequestCancel();
    }

    private void OnHandshake(Frame frame)
    {
        if (frame.Type != FrameType.Hello)
        {
            throw new MuxProtocolException($"The first frame must be Hello; the client sent {frame.Type}.");
        }

        HandshakeSettings client = HandshakeSettings.Parse(frame.Payload);
        if (client.Version != ProtocolConstants.Version)
        {
            RefuseHandshake($"This server speaks Mux protocol version {ProtocolConstants.Version}; the client asked for version {client.Version}. Use client and server builds of the same protocol version (update the older one's Mux package).");
            return;
        }

        if (_options.AuthToken is not null && !string.Equals(_options.AuthToken, client.AuthToken, StringComparison.Ordinal))
        {
            RefuseHandshake("The handshake did not carry the auth token this server requires (MuxClientOptions.AuthToken).");
            return;
        }

        PeerMaxFrameSize = client.MaxFrameSize;
        PeerStreamWindow = client.StreamWindow;
        PeerMaxMessageSize = client.MaxMessageSize;
        PeerEndsFragmentsOnCancel = client.CancelEndsFragments;
        _handshakeDone = true;
        var body = new HelloBody(new HandshakeSettings(ProtocolConstants.Version, _options.MaxFrameSize, _options.MaxConcurrentCallsPerConnection, null) { StreamWindow = _options.StreamWindow, MaxMessageSize = _options.MaxMessageSize });
        SendFrame(FrameType.HelloAck, 0, 0, ref body);
    }

    private void RefuseHandshake(string reason)
    {
        ServerLog.HandshakeRefused(Logger, Name, reason);
        SendError(0, MuxStatusCode.ProtocolError, reason, null);
        Close(MuxCloseReason.ProtocolError, new MuxProtocolException(reason));
    }

    /// <summary>Turns a failed call into an Error frame the caller can act on.</summary>
    internal override void SendFailure(MuxServerCall call, Exception failure)
    {
        call.ReleaseSlot();
        if (IsClosed)
        {
            return; // Nobody is listening.
        }

        if (TryDescribeFailure(call, failure, out ErrorBody error))
        {
            SendError(call.CallId, error.Code, error.Message, error.RemoteType);
            return;
        }

        ServerLog.HandlerFailed(Logger, call.MethodName, Name, failure);
        if (_options.EnableDetailedErrors)
        {
            SendError(call.CallId, MuxStatusCode.HandlerFailed, failure.Message, failure.GetType().FullName);
        }
        else
        {
            // An exception's message may carry internals (SQL, paths, names); only the log gets it.
            SendError(call.CallId, MuxStatusCode.HandlerFailed, $"{call.MethodName} failed on the server. The server's log has the exception; MuxServerOptions.EnableDetailedErrors sends its message to callers.", null);
        }
    }

    private void SendError(uint callId, MuxStatusCode code, string message, string? remoteType)
    {
        var body = new ErrorBody(code, message, remoteType);
        try
        {
            SendFrame(FrameType.Error, callId, 0, ref body);
        }
        catch (MuxConnectionException)
        {
            // The connection closed meanwhile: the client fails the call itself.
        }
        catch (FrameTooLargeException)
        {
            // An enormous exception message: send a short one instead.
            var shortBody = new ErrorBody(code, message[..Math.Min(message.Length, 1024)], remoteType);
            SendFrame(FrameType.Error, callId, 0, ref shortBody);
        }
    }

    internal override void OnCallFinished(MuxServerCall call) => Retire(call);

    /// <summary>Takes a finished (or refused) call out of the table and keeps its object for reuse;
    /// frees its slot if its answer did not already.</summary>
    private void Retire(MuxServerCall call)
    {
        // The decrement is a full fence before _peerFinished is read; OnPeerFinishedSending writes
        // _peerFinished before it counts, so one of the two completes the drain.
        int running = _calls.Remove(call);
        call.ReleaseSlot(); // Only if no answer was queued (refused after GoAway, or the connection closed).
        _callPool.Return(call);
        if (running == 0 && _closesWhenIdle)
        {
            Volatile.Write(ref _idleSince, TimeProvider.GetTimestamp());
        }

        if (running == 0 && _peerFinished)
        {
            _drained.TrySetResult();
        }
    }

    /// <summary>A client that ends its stream while we drain is done sending: finish its calls,
    /// then close (DrainAndCloseAsync). Otherwise it left: close now.</summary>
    protected override bool OnPeerFinishedSending()
    {
        lock (_callsLock)
        {
            if (!_goingAway)
            {
                return false;
            }

            _peerFinished = true;
        }

        Interlocked.MemoryBarrier(); // Pairs with Retire's decrement: see there.
        if (_calls.Count == 0)
        {
            _drained.TrySetResult();
        }

        return true;
    }

    /// <summary>
    /// Closes without losing anything: sends GoAway with the highest call id received, serves every
    /// call up to that id (also ones still on their way), waits until they have finished and the
    /// client has ended its stream, then sends the last responses, shuts down the send side and
    /// closes. When <paramref name="cancellationToken"/> fires first, the handlers still running are
    /// cancelled and the connection closes at once. <paramref name="reason"/> is the close's
    /// (LocalShutdown, or IdleTimeout for the idle close).
    /// </summary>
    public async Task DrainAndCloseAsync(CancellationToken cancellationToken, MuxCloseReason reason = MuxCloseReason.LocalShutdown)
    {
        uint goAwayCallId;
        lock (_callsLock)
        {
            if (!_goingAway)
            {
                _goingAway = true;
                Interlocked.MemoryBarrier(); // Pairs with Dispatch: see _goingAway.
                _goAwayCallId = _highestReceivedCallId;
            }

            goAwayCallId = _goAwayCallId;
        }

        if (!_handshakeDone || !TrySendGoAway(goAwayCallId))
        {
            // Nothing was promised on this connection (or it is already closed).
            CloseGracefully(reason, TimeSpan.Zero);
            await Completion.ConfigureAwait(false);
            return;
        }

        bool finished;
        try
        {
            await _drained.Task.WaitAsync(cancellationToken).ConfigureAwait(false);
            finished = true;
        }
        catch (OperationCanceledException)
        {
            finished = false; // Out of patience: close now; the handlers still running are cancelled.
        }

        // Finished: the client has already ended its stream, so nothing is left to read.
        CloseGracefully(reason, finished ? DefaultDrainTimeout : TimeSpan.Zero);
        await Completion.ConfigureAwait(false);
    }

    private bool TrySendGoAway(uint goAwayCallId)
    {
        Span<byte> payload = stackalloc byte[ProtocolConstants.GoAwayPayloadSize];
        BinaryPrimitives.WriteUInt32LittleEndian(payload, goAwayCallId);
        try
        {
            SendRawFrame(FrameType.GoAway, 0, payload);
            return true;
        }
        catch (MuxConnectionException)
        {
            return false;
        }
    }

    protected override void OnClosed(MuxConnectionException error)
    {
        _closing.Cancel();
        _drained.TrySetResult();
        FailClientCalls(error);
        foreach (MuxServerCall call in _calls.Snapshot())
        {
            call.RequestCancel();
        }
    }
}
