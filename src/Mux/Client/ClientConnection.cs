using System.Buffers;
using System.Buffers.Binary;
using System.Diagnostics;
using System.Runtime.CompilerServices;
using MessagePack;
using Microsoft.Extensions.Logging;
using Mux.Connection;
using Mux.Diagnostics;
using Mux.Protocol;
using Mux.Serialization;
using Mux.Streaming;
using Mux.Transport;

namespace Mux.Client;

/// <summary>
/// The client end of a connection: sends requests, correlates responses by call id, and makes
/// sure every call completes exactly once (see <see cref="PendingCall"/>).
/// </summary>
internal sealed partial class ClientConnection : MuxConnection, IPendingCallHost
{
    private readonly PendingCallTable _pending = new();

    // Completed by HelloAck (or failed by a refusal or close). Continuations run asynchronously so
    // that ConnectAsync's caller never runs on the reader loop.
    private readonly TaskCompletionSource _handshake = new(TaskCreationOptions.RunContinuationsAsynchronously);

    private readonly MuxClientOptions _options;

    // Scans the table for expired calls, on the options' TimeProvider. Created by the constructor
    // when CallTimeout is finite, else by the first call that inherits a deadline
    // (MuxCallContext.Current), through CompareExchange; null while no call has a deadline.
    // Disposed on close.
    private ITimer? _timeoutTimer;

    // The last call id handed out; incremented atomically by callers.
    private uint _lastCallId;

    // Set (once) when the server sent GoAway: new calls fail at once. Written by the reader loop.
    private volatile bool _goingAway;

    // The server's maxConcurrentCalls, honoured here: a call holds a slot from before its Request
    // is sent until the server's answer for it arrives. Created by the reader loop from HelloAck,
    // before the handshake completes; used by callers after.
    private volatile ClientCallSlots _slots = new(int.MaxValue);

    // Calls the caller gave up on (cancelled or timed out) whose answer from the server has not
    // arrived yet: their slots stay taken until it does, because the server still counts them.
    // Guarded by itself; touched only on those rare paths.
    private readonly HashSet<uint> _abandoned = new();

    // Whether the server's HelloAck said it reads trace context in Requests. Written once by the
    // reader loop before the handshake completes; read by callers after.
    private volatile bool _serverReadsTraceContext;

    // Lets callers that wait for room in the outbound queue (MaxOutboundBytesPerConnection) queue
    // their requests one at a time. Taken only on that slow path; never on the way of a call that
    // finds room.
    private readonly SemaphoreSlim _roomGate = new(1, 1);

    private ClientConnection(IMuxTransport transport, MuxClientOptions options, ILogger logger, string name)
        : base(transport, options.MaxFrameSize, logger, name)
    {
        _options = options;
        TimeProvider = options.TimeProvider;
        KeepAliveInterval = options.KeepAliveInterval;
        KeepAliveTimeout = options.KeepAliveTimeout;
        MaxQueuedOutboundBytes = options.MaxOutboundBytesPerConnection;
        StreamWindow = options.StreamWindow;
        MaxMessageSize = options.MaxMessageSize;
        PeerOptionsName = nameof(MuxServerOptions);
        FragmentSize = options.FragmentSize;
        SerializerOptions = MuxSerializerOptions.ForClient(options.SerializerOptions);
        if (options.CallTimeout != Timeout.InfiniteTimeSpan)
        {
            _timeoutTimer = CreateTimeoutTimer(options.CallTimeout);
        }
    }

    private ITimer CreateTimeoutTimer(TimeSpan timeout)
    {
        // A tenth of the timeout keeps deadlines within ~10% without waking often.
        var period = TimeSpan.FromMilliseconds(Math.Clamp((long)timeout.TotalMilliseconds / 10, 10, 1000));
        using (ExecutionContext.SuppressFlow())
        {
            return TimeProvider.CreateTimer(static state => ((ClientConnection)state!).FailExpiredCalls(), this, period, period);
        }
    }

    /// <summary>Starts the expiry scan for a call whose only deadline is the one it inherited, on a
    /// client whose own calls have none. Rare: once per connection.</summary>
    [MethodImpl(MethodImplOptions.NoInlining)]
    private void EnsureTimeoutTimer(long deadline, long now)
    {
        ITimer created = CreateTimeoutTimer(deadline > now ? TimeProvider.GetElapsedTime(now, deadline) : TimeSpan.Zero);
        if (Interlocked.CompareExchange(ref _timeoutTimer, created, null) is not null || IsClosed)
        {
            // Another call started one first, or the close may already have disposed the field's.
            created.Dispose();
        }
    }

    public int PendingCallCount => _pending.Count;

    /// <summary>Whether the server sent GoAway: the connection takes no new calls.</summary>
    public bool IsGoingAway => _goingAway;

    /// <summary>Whether new calls can be sent: open, and no GoAway received.</summary>
    public bool IsUsable => !_goingAway && !IsClosed;

    /// <summary>The server's socket address; null in memory. Set once, before any call.</summary>
    public System.Net.EndPoint? RemoteEndPoint { get; set; }

    /// <summary>What a call on this connection fails with once it has closed.</summary>
    public MuxConnectionException CloseError => CreateClosedException();

    /// <summary>The server's address and port for span tags; null in memory. Set once, by
    /// MuxClient, before any call.</summary>
    public ServerPeer? Peer { get; set; }

    /// <summary>The options arguments are written and results read with: the user's, with
    /// generated formatters consulted first. Immutable.</summary>
    public MessagePackSerializerOptions SerializerOptions { get; }

    // The call being sent is already in the table, so one pending call means a lone caller.
    protected override bool IsQuiet => _pending.Count <= 1;

    /// <summary>Starts the loops, sends Hello, and waits for the server's HelloAck.</summary>
    // services: what the connection serves to calls the server starts (its MuxClient's); null for none.
    public static async Task<ClientConnection> ConnectAsync(IMuxTransport transport, MuxClientOptions options, ILogger logger, string name, CancellationToken cancellationToken, ClientServices? services = null)
    {
        var connection = new ClientConnection(transport, options, logger, name);
        connection._services = services ?? s_noServices;
        connection.StartLoops();
        try
        {
            var settings = new HandshakeSettings(ProtocolConstants.Version, options.MaxFrameSize, int.MaxValue, options.AuthToken) { StreamWindow = options.StreamWindow, MaxMessageSize = options.MaxMessageSize };
            connection.SendHello(settings);
            await connection._handshake.Task.WaitAsync(options.ConnectTimeout, cancellationToken).ConfigureAwait(false);
            return connection;
        }
        catch (TimeoutException ex)
        {
            connection.Close(MuxCloseReason.HandshakeTimeout, ex);
            await connection.Completion.ConfigureAwait(false);
            throw new MuxConnectionException($"The Mux server at {name} did not answer the handshake within {DurationText.Format(options.ConnectTimeout)} (MuxClientOptions.ConnectTimeout).", MuxCloseReason.HandshakeTimeout, ex);
        }
        catch
        {
            await connection.DisposeAsync().ConfigureAwait(false);
            throw;
        }
    }

    private void SendHello(in HandshakeSettings settings)
    {
        var body = new HelloBody(settings);
        SendFrame(FrameType.Hello, 0, 0, ref body);
    }

    /// <summary>Starts a call that must end by <paramref name="deadline"/>, fixed when the user made
    /// it (<see cref="CallDeadline.Fix"/>); <paramref name="now"/> is the caller's latest reading of
    /// the clock (0 for a call without a deadline), so that a call sent at once reads it no more.
    /// <paramref name="streams"/> are the call's streams when its method takes or returns an
    /// IAsyncEnumerable (Mux.Streaming); such a call has no deadline (<see cref="CallDeadline.None"/>):
    /// it lasts as long as its streams do, and its token ends it.</summary>
    public ValueTask<TResult> InvokeAsync<TArguments, TResult>(uint methodId, in TArguments arguments, in CallDeadline deadline, long now, CancellationToken cancellationToken, CallStreams? streams = null)
        where TArguments : struct
    {
        if (cancellationToken.IsCancellationRequested)
        {
            return ValueTask.FromCanceled<TResult>(cancellationToken);
        }

        if (IsOutboundFull || !_slots.TryTake())
        {
            return InvokeWhenASlotIsFreeAsync<TArguments, TResult>(methodId, arguments, deadline, cancellationToken, streams);
        }

        return InvokeHoldingSlot<TArguments, TResult>(methodId, arguments, deadline, now, cancellationToken, streams);
    }

    private ValueTask<TResult> InvokeHoldingSlot<TArguments, TResult>(uint methodId, in TArguments arguments, in CallDeadline deadline, long now, CancellationToken cancellationToken, CallStreams? streams)
        where TArguments : struct
    {
        PendingCall<TResult> call = PendingCall<TResult>.Rent(this, 0, methodId, deadline.At);
        call.InheritedFrom = deadline.InheritedFrom;
        call.Streams = streams;
        Exception? failure = Start(call, methodId, arguments, now, cancellationToken);
        return failure is null ? new ValueTask<TResult>(call, call.Version) : ValueTask.FromException<TResult>(failure);
    }

    /// <summary>The socket is behind (the server is not reading) or the server runs as many calls
    /// as it allows: wait (asynchronously, cancellably, within the call's deadline) for room in
    /// the outbound queue, then for one of ours to be answered, then send.</summary>
    private async ValueTask<TResult> InvokeWhenASlotIsFreeAsync<TArguments, TResult>(uint methodId, TArguments arguments, CallDeadline deadline, CancellationToken cancellationToken, CallStreams? streams)
        where TArguments : struct
    {
        await WaitForSlotAsync(methodId, deadline, cancellationToken).ConfigureAwait(false);
        if (!IsOutboundFull)
        {
            return await InvokeHoldingSlot<TArguments, TResult>(methodId, arguments, deadline, deadline.Now(TimeProvider), cancellationToken, streams).ConfigureAwait(false);
        }

        ValueTask<TResult> call;
        await EnterRoomGateAsync(methodId, deadline, cancellationToken).ConfigureAwait(false);
        try
        {
            call = InvokeHoldingSlot<TArguments, TResult>(methodId, arguments, deadline, deadline.Now(TimeProvider), cancellationToken, streams);
        }
        finally
        {
            _roomGate.Release();
        }

        return await call.ConfigureAwait(false);
    }

    /// <summary>Starts a call that returns no value; see
    /// <see cref="InvokeAsync{TArguments, TResult}(uint, in TArguments, in CallDeadline, long, CancellationToken, CallStreams?)"/>.</summary>
    public ValueTask InvokeAsync<TArguments>(uint methodId, in TArguments arguments, in CallDeadline deadline, long now, CancellationToken cancellationToken)
        where TArguments : struct
    {
        if (cancellationToken.IsCancellationRequested)
        {
            return ValueTask.FromCanceled(cancellationToken);
        }

        if (IsOutboundFull || !_slots.TryTake())
        {
            return InvokeWhenASlotIsFreeAsync(methodId, arguments, deadline, cancellationToken);
        }

        return InvokeHoldingSlot(methodId, arguments, deadline, now, cancellationToken);
    }

    private ValueTask InvokeHoldingSlot<TArguments>(uint methodId, in TArguments arguments, in CallDeadline deadline, long now, CancellationToken cancellationToken)
        where TArguments : struct
    {
        PendingCall<VoidResult> call = PendingCall<VoidResult>.Rent(this, 0, methodId, deadline.At);
        call.InheritedFrom = deadline.InheritedFrom;
        Exception? failure = Start(call, methodId, arguments, now, cancellationToken);
        return failure is null ? new ValueTask(call, call.Version) : ValueTask.FromException(failure);
    }

    private async ValueTask InvokeWhenASlotIsFreeAsync<TArguments>(uint methodId, TArguments arguments, CallDeadline deadline, CancellationToken cancellationToken)
        where TArguments : struct
    {
        await WaitForSlotAsync(methodId, deadline, cancellationToken).ConfigureAwait(false);
        if (!IsOutboundFull)
        {
            await InvokeHoldingSlot(methodId, arguments, deadline, deadline.Now(TimeProvider), cancellationToken).ConfigureAwait(false);
            return;
        }

        ValueTask call;
        await EnterRoomGateAsync(methodId, deadline, cancellationToken).ConfigureAwait(false);
        try
        {
            call = InvokeHoldingSlot(methodId, arguments, deadline, deadline.Now(TimeProvider), cancellationToken);
        }
        finally
        {
            _roomGate.Release();
        }

        await call.ConfigureAwait(false);
    }

    private async ValueTask WaitForSlotAsync(uint methodId, CallDeadline deadline, CancellationToken cancellationToken)
    {
        try
        {
            await _slots.WaitAsync(TimeLeft(deadline), TimeProvider, cancellationToken).ConfigureAwait(false);
        }
        catch (TimeoutException)
        {
            throw CreateTimeoutException(methodId, deadline.InheritedFrom, " (it waited for one of the server's MaxConcurrentCallsPerConnection slots all that time)");
        }
    }

    /// <summary>
    /// Holding a slot, waits until the outbound queue is under MaxOutboundBytesPerConnection (the
    /// writer took it, which it does once the socket accepted the previous batch) or the connection
    /// closed (the send then fails as "not run"), then holds <see cref="_roomGate"/>: the caller
    /// releases it once its request is queued, so waiters go one at a time and the queue passes the
    /// limit by at most one request each time it drains, instead of by every waiter's at once. A
    /// caller that gives up queues nothing and gives its slot back.
    /// </summary>
    private async ValueTask EnterRoomGateAsync(uint methodId, CallDeadline deadline, CancellationToken cancellationToken)
    {
        // SemaphoreSlim takes no TimeProvider, so the deadline is a token on the options' clock,
        // one for the whole wait. Rare path (the server stopped reading): the allocations are fine.
        using CancellationTokenSource? expiry = deadline.IsSet ? new CancellationTokenSource(TimeLeft(deadline), TimeProvider) : null;
        using CancellationTokenSource? linked = expiry is not null && cancellationToken.CanBeCanceled
            ? CancellationTokenSource.CreateLinkedTokenSource(cancellationToken, expiry.Token)
            : null;
        CancellationToken token = linked?.Token ?? expiry?.Token ?? cancellationToken;
        bool entered = false;
        try
        {
            await _roomGate.WaitAsync(token).ConfigureAwait(false);
            entered = true;
            while (IsOutboundFull && !IsClosed)
            {
                await WaitForOutboundRoomAsync().WaitAsync(token).ConfigureAwait(false);
            }
        }
        catch (Exception ex)
        {
            if (entered)
            {
                _roomGate.Release();
            }

            _slots.Release(); // Nothing was sent.
            if (ex is OperationCanceledException && expiry is not null)
            {
                // The deadline's token fired, or the caller's: each is reported as the caller knows it.
                throw cancellationToken.IsCancellationRequested
                    ? new OperationCanceledException(ex.Message, ex, cancellationToken)
                    : CreateOutboundTimeoutException(methodId, deadline.InheritedFrom);
            }

            throw;
        }
    }

    /// <summary>How long a wait may last before the call's deadline: infinite without one, zero
    /// once it has passed (the wait then times out at once).</summary>
    private TimeSpan TimeLeft(in CallDeadline deadline)
    {
        ClockDeadline.TryGetRemaining(TimeProvider, deadline.At, out TimeSpan left);
        return left;
    }

    private TimeoutException CreateOutboundTimeoutException(uint methodId, string? inheritedFrom) =>
        CreateTimeoutException(methodId, inheritedFrom, $" (it waited all that time to be sent: the connection already had {DescribeBytes(MaxQueuedOutboundBytes)} of requests queued for a server that is not reading them, MuxClientOptions.MaxOutboundBytesPerConnection)");

    private static string DescribeBytes(int bytes) =>
        bytes % (1024 * 1024) == 0 ? $"{bytes / (1024 * 1024)} MiB" : bytes % 1024 == 0 ? $"{bytes / 1024} KiB" : $"{bytes} bytes";

    /// <summary>The timeout a call that had <paramref name="inheritedFrom"/>'s deadline (or, when
    /// null, CallTimeout's) fails with; <paramref name="detail"/> says what it was waiting for.</summary>
    private TimeoutException CreateTimeoutException(uint methodId, string? inheritedFrom, string detail) =>
        inheritedFrom is not null
            ? new($"The Mux call to {MuxServiceRegistry.GetMethodDisplayName(methodId)} did not complete by the deadline it inherited from the call this server handler serves ({inheritedFrom}, MuxCallContext.Current), which came sooner than MuxClientOptions.CallTimeout{detail}.")
            : new($"The Mux call to {MuxServiceRegistry.GetMethodDisplayName(methodId)} did not complete within {DurationText.Format(_options.CallTimeout)} (MuxClientOptions.CallTimeout){detail}.");

    private TimeoutException CreateExpiredException(PendingCall call) =>
        CreateTimeoutException(call.MethodId, call.InheritedFrom, "");

    /// <summary>Starts the call's telemetry, then the call (see <see cref="StartCall"/>); a call
    /// that fails before anything was sent ends its telemetry here.</summary>
    private Exception? Start<TResult, TArguments>(PendingCall<TResult> call, uint methodId, in TArguments arguments, long now, CancellationToken cancellationToken)
        where TArguments : struct
    {
        ClientCallTelemetry telemetry = call.Telemetry = ClientCallTelemetry.Start(methodId, Peer);
        Exception? failure = StartCall(call, methodId, arguments, now, cancellationToken);
        if (failure is not null)
        {
            _slots.Release(); // Nothing was sent: the server will not answer it.
            telemetry.Stop(failure);
        }

        return failure;
    }

    /// <summary>
    /// Publishes the call, sends its request (its deadline header measured at <paramref name="now"/>)
    /// and hooks up cancellation. Returns an exception when the call failed before anything was
    /// sent (the call object is then back in its pool).
    /// </summary>
    private Exception? StartCall<TResult, TArguments>(PendingCall<TResult> call, uint methodId, in TArguments arguments, long now, CancellationToken cancellationToken)
        where TArguments : struct
    {
        if (call.Deadline <= now)
        {
            // Its deadline passed while it waited (for a connection, a slot, room, or a resend):
            // the server would only refuse it, so it is not sent, and no retry would help either.
            Exception expired = CreateTimeoutException(methodId, call.InheritedFrom, " (its time ran out while it waited to be sent; it was not sent)");
            call.ReturnUnused();
            return expired;
        }

        if (_timeoutTimer is null && call.Deadline != ClockDeadline.Never)
        {
            EnsureTimeoutTimer(call.Deadline, now);
        }

        if (_goingAway)
        {
            call.ReturnUnused();
            return MuxConnectionException.NotRun($"The Mux server at {Name} is shutting down (it sent GoAway); the call was not sent.", MuxCloseReason.GoAway, null);
        }

        // Read before the Request goes out: from then on the call may complete and be reused.
        CallStreams? streams = call.Streams;
        while (true)
        {
            call.SetCallId(NextCallId());
            if (_pending.TryAdd(call, out bool closed))
            {
                break;
            }

            if (closed)
            {
                call.ReturnUnused();
                MuxConnectionException error = CreateClosedException();
                return MuxConnectionException.NotRun($"The call was not sent: {error.Message}", error.Reason, error.InnerException);
            }

            // The id is still in use after wrapping around 2^32 calls: take the next one.
        }

        if (streams is not null)
        {
            RegisterStreams(call.CallId, streams); // Before the Request: the server may stream at once.
        }

        try
        {
            // A call that streams its arguments gets its send window only once its Request is out
            // whole, which for a Request in fragments is a few writer turns from now.
            SendRequest(call, methodId, arguments, now, streams?.Sender is null ? null : new SendWindowOpener(streams, PeerStreamWindow));
        }
        catch (Exception ex)
        {
            if (_pending.TryRemove(call.CallId, call))
            {
                call.ReturnUnused();

                // SendFrame throws MuxConnectionException only before it queues anything.
                return ex is MuxConnectionException { IsSafeToRetry: false } closed
                    ? MuxConnectionException.NotRun($"The call was not sent: {closed.Message}", closed.Reason, closed.InnerException)
                    : ex;
            }

            // A close removed the call first and is already failing it: let that outcome stand.
            return null;
        }

        if (cancellationToken.CanBeCanceled)
        {
            call.RegisterCancellation(cancellationToken);
        }

        return null;
    }

    /// <summary>Sends the call's Request with the optional headers it needs: its deadline (when it
    /// has one: what is left of it at <paramref name="now"/>) and the caller's trace context (when
    /// the server reads it).</summary>
    private void SendRequest<TArguments>(PendingCall call, uint methodId, in TArguments arguments, long now, IMessageWrittenListener? whenWritten)
        where TArguments : struct
    {
        var body = new ArgumentsBody<TArguments>(arguments, SerializerOptions);
        Activity? trace = _serverReadsTraceContext ? call.Telemetry.Activity ?? Activity.Current : null;
        bool traced = trace is not null && TraceContextHeader.CanPropagate(trace);
        if (call.Deadline == ClockDeadline.Never)
        {
            if (!traced)
            {
                SendFrame(FrameType.Request, call.CallId, methodId, ref body, whenWritten: whenWritten);
            }
            else
            {
                var tracedBody = new TracedBody<ArgumentsBody<TArguments>>(body, trace!);
                SendFrame(FrameType.Request, call.CallId, methodId, ref tracedBody, FrameFlags.TraceContext, whenWritten);
            }

            return;
        }

        // now is the caller's latest reading: taken when the call was made when it is sent at once,
        // or after its last wait; so the server's clock starts from what is really left.
        uint remaining = DeadlineHeader.RemainingMilliseconds(call.Deadline, now, TimeProvider.TimestampFrequency);
        if (!traced)
        {
            var timed = new DeadlineBody<ArgumentsBody<TArguments>>(body, remaining);
            SendFrame(FrameType.Request, call.CallId, methodId, ref timed, FrameFlags.Deadline, whenWritten);
        }
        else
        {
            var timed = new DeadlineBody<TracedBody<ArgumentsBody<TArguments>>>(new TracedBody<ArgumentsBody<TArguments>>(body, trace!), remaining);
            SendFrame(FrameType.Request, call.CallId, methodId, ref timed, FrameFlags.Deadline | FrameFlags.TraceContext, whenWritten);
        }
    }

    private uint NextCallId()
    {
        uint id = Interlocked.Increment(ref _lastCallId);
        return id != 0 ? id : Interlocked.Increment(ref _lastCallId); // 0 is reserved for the connection.
    }

    /// <summary>Removes a call its caller gave up on (cancellation). Its slot stays taken until
    /// the server answers: the handler still runs there until it sees the Cancel.</summary>
    public bool TryRemovePending(uint callId, PendingCall call)
    {
        bool removed = _pending.TryRemove(callId, call);
        if (removed)
        {
            Abandon(callId);
        }

        CloseIfDrainedAfterGoAway();
        return removed;
    }

    private void Abandon(uint callId)
    {
        lock (_abandoned)
        {
            _abandoned.Add(callId);
        }
    }

    /// <summary>The server answered a call: its slot is free again, whether the caller still waits
    /// for the answer (<paramref name="call"/>) or gave up on it. An answer to an id we never sent
    /// (or already counted) frees nothing.</summary>
    private void OnAnswered(uint callId, PendingCall? call)
    {
        if (call is null)
        {
            lock (_abandoned)
            {
                if (!_abandoned.Remove(callId))
                {
                    return;
                }
            }
        }

        _slots.Release();
    }

    /// <summary>After GoAway, the connection closes (gracefully) once the last call the server
    /// promised to serve has completed.</summary>
    private void CloseIfDrainedAfterGoAway()
    {
        if (_goingAway && _pending.Count == 0)
        {
            CloseGracefully(MuxCloseReason.GoAway, DefaultDrainTimeout);
        }
    }

    /// <summary>Tells the server the caller gave up; best effort (the connection may be gone).</summary>
    public void SendCancelQuietly(uint callId)
    {
        try
        {
            SendRawFrame(FrameType.Cancel, callId, ReadOnlySpan<byte>.Empty);
        }
        catch (MuxConnectionException)
        {
            // Closed: the server cancels every handler of a closed connection anyway.
        }
    }

    private void FailExpiredCalls()
    {
        List<PendingCall>? expired = null;
        _pending.RemoveExpired(TimeProvider.GetTimestamp(), ref expired);
        if (expired is null)
        {
            return;
        }

        CloseIfDrainedAfterGoAway();
        foreach (PendingCall call in expired)
        {
            Abandon(call.CallId);
            SendCancelQuietly(call.CallId);
            call.CompleteWithException(CreateExpiredException(call));
        }
    }

    protected override ValueTask OnFrameAsync(Frame frame)
    {
        if ((frame.Flags & FrameFlags.ServerInitiated) != 0)
        {
            OnServerCallFrame(frame); // A call the server started (ClientConnection.ServerCalls.cs).
            return ValueTask.CompletedTask;
        }

        switch (frame.Type)
        {
            case FrameType.Response:
                OnAnswer(frame, CallOutcome.Response);
                break;
            case FrameType.Error when frame.CallId != 0:
                OnAnswer(frame, CallOutcome.Error);
                break;
            case FrameType.Error:
                OnConnectionError(frame.Payload);
                break;
            case FrameType.HelloAck:
                HandshakeSettings settings = HandshakeSettings.Parse(frame.Payload, out bool serverReadsTraceContext);
                if (settings.Version != ProtocolConstants.Version)
                {
                    throw new MuxProtocolException($"The server answered with protocol version {settings.Version}; this client speaks version {ProtocolConstants.Version}.");
                }

                PeerMaxFrameSize = settings.MaxFrameSize;
                PeerStreamWindow = settings.StreamWindow;
                PeerMaxMessageSize = settings.MaxMessageSize;
                PeerEndsFragmentsOnCancel = settings.CancelEndsFragments;
                _slots = new ClientCallSlots(settings.MaxConcurrentCalls);
                _serverReadsTraceContext = serverReadsTraceContext;
                _handshake.TrySetResult();
                break;
            case FrameType.Ping:
                SendRawFrame(FrameType.Pong, frame.CallId, frame.Payload.ToArray());
                break;
            case FrameType.Pong:
                break;
            case FrameType.GoAway:
                OnGoAway(ReadUInt32(frame.Payload));
                break;
            case FrameType.StreamItem:
                OnStreamItem(frame);
                break;
            case FrameType.StreamCredit:
                OnStreamCredit(frame.CallId, ReadStreamCredit(frame.Payload));
                break;
            default:
                throw new MuxProtocolException($"A client does not accept {frame.Type} frames.");
        }

        return ValueTask.CompletedTask;
    }

    private void OnAnswer(in Frame frame, CallOutcome outcome)
    {
        PendingCall? call = _pending.TryRemove(frame.CallId);
        OnAnswered(frame.CallId, call);
        if (call is not null)
        {
            if (outcome == CallOutcome.Error && call.Deadline != ClockDeadline.Never && IsDeadlineExceeded(frame.Payload))
            {
                // The server saw this call's deadline pass (before our own expiry scan, which runs
                // every tenth of the timeout, did): the caller gets the same timeout either way.
                call.CompleteWithException(CreateExpiredException(call));
            }
            else
            {
                call.CompleteWithPayload(outcome, frame.Payload, this);
            }
        }

        CloseIfDrainedAfterGoAway();
    }

    /// <summary>Whether an Error body (MessagePack <c>[code, message, type]</c>) carries
    /// <see cref="MuxStatusCode.DeadlineExceeded"/>: its first two bytes are 0x93 and the code's fixint.</summary>
    private static bool IsDeadlineExceeded(in ReadOnlySequence<byte> payload)
    {
        ReadOnlySpan<byte> start = payload.FirstSpan;
        return start.Length >= 2 && start[0] == 0x93 && start[1] == (byte)MuxStatusCode.DeadlineExceeded;
    }

    /// <summary>A response over MaxMessageSize from a server that ignored the limit this client
    /// announced: its call fails now (its remaining fragments are skipped); the connection stays up.</summary>
    protected override void OnMessageTooLarge(in Frame first)
    {
        if ((first.Flags & FrameFlags.ServerInitiated) != 0)
        {
            OnServerCallTooLarge(first); // A Request of the server's (ClientConnection.ServerCalls.cs).
            return;
        }

        if (first.Type is not (FrameType.Response or FrameType.Error))
        {
            throw new MuxProtocolException($"A client does not accept {first.Type} frames.");
        }

        PendingCall? call = _pending.TryRemove(first.CallId);
        OnAnswered(first.CallId, call);
        call?.CompleteWithException(new MuxRemoteException(
            MuxStatusCode.MessageTooLarge,
            $"The {(first.Type == FrameType.Response ? "response" : "error")} to {MuxServiceRegistry.GetMethodDisplayName(call.MethodId)} is {first.MessageSize} bytes, over this client's MaxMessageSize of {MaxMessageSize} bytes ({DescribeSize(MaxMessageSize)}, MuxClientOptions.MaxMessageSize); it was skipped. Raise MuxClientOptions.MaxMessageSize, or ask for less.",
            null));
        CloseIfDrainedAfterGoAway();
    }

    private void OnConnectionError(in ReadOnlySequence<byte> payload)
    {
        // A connection-level error (call id 0): the server refused the handshake or is closing.
        ErrorBody error = ErrorBody.Read(payload.ToArray());
        var exception = new MuxConnectionException($"The Mux server at {Name} refused the connection: {error.Message}", MuxCloseReason.ProtocolError, new MuxRemoteException(error.Code, error.Message, error.RemoteType));
        _handshake.TrySetException(exception);
        Close(MuxCloseReason.ProtocolError, exception.InnerException);
    }

    private void OnGoAway(uint lastServedCallId)
    {
        _goingAway = true;
        _slots.Fail(MuxConnectionException.NotRun($"The Mux server at {Name} is shutting down (it sent GoAway); the call was not sent.", MuxCloseReason.GoAway, null));
        var notServed = new List<PendingCall>();
        _pending.RemoveAbove(lastServedCallId, notServed);
        foreach (PendingCall call in notServed)
        {
            call.CompleteWithException(MuxConnectionException.NotRun($"The Mux server at {Name} is shutting down and did not run this call; it is safe to retry.", MuxCloseReason.GoAway, null));
        }

        CloseIfDrainedAfterGoAway();
    }

    protected override void OnClosed(MuxConnectionException error)
    {
        _timeoutTimer?.Dispose();
        _handshake.TrySetException(error);
        CancelServedCalls();
        // Calls still waiting for a slot were never sent: safe to send again elsewhere.
        _slots.Fail(MuxConnectionException.NotRun($"The call was not sent: {error.Message}", error.Reason, error.InnerException));
        var calls = new List<PendingCall>();
        _pending.Close(calls);
        foreach (PendingCall call in calls)
        {
            call.CompleteWithException(error);
        }
    }

    private static uint ReadUInt32(in ReadOnlySequence<byte> payload)
    {
        Span<byte> bytes = stackalloc byte[4];
        payload.Slice(0, 4).CopyTo(bytes);
        return BinaryPrimitives.ReadUInt32LittleEndian(bytes);
    }
}
