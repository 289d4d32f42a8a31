using System.Diagnostics;
using System.Runtime.CompilerServices;
using Mux.Diagnostics;
using Mux.Protocol;
using Mux.Serialization;
using Mux.Streaming;

namespace Mux.Connection;

/// <summary>
/// The caller role of a connection, on either side: it numbers this side's calls, keeps each in the pending table until it
/// completes exactly once, honours the peer's call cap and the outbound limit, and tells the peer when a caller gives up.
/// </summary>
/// <remarks>
/// Here: its state, the start of a call and its Request. OutgoingCalls.Waits.cs: the waits, the expiry scan and the
/// caller's token. OutgoingCalls.Answers.cs: the peer's answers and streams, GoAway and the close.
/// </remarks>
internal sealed partial class OutgoingCalls
{
    // About how many calls a connection has in flight: more only makes more calls share a slot of the table.
    private const int ExpectedCalls = 1024;

    private readonly MuxConnection _connection;
    private readonly Outbound _outbound;

    // Calls waiting for their answer, by id: added by callers, removed by whoever completes them.
    private readonly CallTable<PendingCall> _pending = new(ExpectedCalls);

    // ServerInitiated on a server's calls to its client, none on a client's: every frame of these calls carries it.
    private readonly FrameFlags _idSpace;

    // The side's timeout for its calls, for the expiry scan's period and the timeout's message.
    private readonly TimeSpan _timeout;

    // Set once, by the peer's GoAway (reader loop) or StopSending: new calls fail at once.
    private volatile bool _goingAway;

    // The peer's maxConcurrentCalls: a call holds a slot from before its Request until its answer. Replaced from the
    // peer's handshake before any call.
    private volatile CallSlots _slots = new(int.MaxValue);

    // Calls given up on whose answer has not come: the peer still counts them, so their slots stay taken until it does.
    // A call moves here from the table under this lock, so an answer the reader cannot find in the table is found here.
    private readonly HashSet<uint> _abandoned = [];

    // _abandoned.Count, written under its lock: once ids have come round, a call takes the lock only when this is not 0.
    private volatile int _abandonedCount;

    // The last id handed out in the low 32 bits; 64 bits, so that ids coming round are noticed.
    private long _lastCallId;

    // Set once 2^32 ids have been handed out, by the caller that takes the first such id before it uses it: from then
    // on an id may still be in use.
    private volatile bool _idsCameRound;

    public OutgoingCalls(MuxConnection connection, TimeSpan timeout)
    {
        _connection = connection;
        _outbound = connection.Outbound;
        _timeout = timeout;
        _idSpace = connection.IsServer ? FrameFlags.ServerInitiated : FrameFlags.None;
    }

    public MuxConnection Connection => _connection;

    /// <summary>Calls waiting for their answer now (read without a lock; exact at quiet moments).</summary>
    public int Count => _pending.Count;

    /// <summary>Whether the peer sent GoAway, or this side stopped sending: no new call is sent.</summary>
    public bool IsGoingAway => _goingAway;

    /// <summary>Set by a client that closes for good, before it closes this connection: a call the close leaves unsent
    /// fails with this instead of "not sent, safe to retry", which would have its caller retry on a client that is gone.</summary>
    public Func<MuxConnectionException>? LeftUnsentByClose { get; set; }

    /// <summary>The server's address and port for span tags; null in memory or on a server. Set before any call.</summary>
    public ServerPeer? Peer { get; set; }

    /// <summary>For tests: free slots, and calls given up on whose answer has not come. At a quiet moment the first is
    /// the peer's cap and the second 0, or a slot leaked.</summary>
    internal (int FreeSlots, int Abandoned) SlotAccount
    {
        get
        {
            lock (_abandoned)
            {
                return (_slots.Free, _abandoned.Count);
            }
        }
    }

    // The connection's clock: deadlines are its timestamps.
    private TimeProvider Clock => _connection.TimeProvider;

    /// <summary>Takes the peer's cap on these calls from its handshake, before any call.</summary>
    public void OnPeerSettings(in PeerSettings peer) => _slots = new CallSlots(peer.MaxConcurrentCalls);

    /// <summary>Throws unless the peer takes streams on these calls: a client of an older Mux does not on its server's
    /// calls, and would close the connection on their frames.</summary>
    public void RequireStreams()
    {
        if (!_connection.Peer.TakesStreams)
        {
            throw new NotSupportedException(
                $"The Mux {_connection.PeerName} at {_connection.Name} does not take IAsyncEnumerable streams on the calls its server " +
                "starts (it did not announce serverCallStreams: an older Mux); call it with methods that take and return no stream.");
        }
    }

    /// <summary>
    /// Starts a call that must end by <paramref name="deadline"/>. <paramref name="now"/> is the caller's latest reading
    /// of the clock (0 without a deadline), so a call sent at once reads it no more. A call with
    /// <paramref name="streams"/> has no deadline: it lasts as long as its streams, and its token ends it.
    /// <paramref name="metadata"/> is the encoded metadata section, or null.
    /// </summary>
    public ValueTask<TResult> InvokeAsync<TArguments, TResult>(
        uint methodId, in TArguments arguments, in CallDeadline deadline, long now, CancellationToken cancellationToken,
        CallStreams? streams = null, byte[]? metadata = null)
        where TArguments : struct
    {
        PendingCall<TResult>? call = Start(methodId, arguments, deadline, now, cancellationToken, streams, metadata, out ValueTask<TResult> other);
        return call is not null ? new ValueTask<TResult>(call, call.Version) : other;
    }

    /// <summary>Starts a call that returns no value, as the other overload does; the call sent at once is awaited through
    /// its own object too.</summary>
    public ValueTask InvokeAsync<TArguments>(
        uint methodId, in TArguments arguments, in CallDeadline deadline, long now, CancellationToken cancellationToken, byte[]? metadata = null)
        where TArguments : struct
    {
        PendingCall<VoidResult>? call = Start(methodId, arguments, deadline, now, cancellationToken, null, metadata, out ValueTask<VoidResult> other);
        // Otherwise a Task already, or one more Task on the rare wait for a slot or room.
        return call is not null ? new ValueTask(call, call.Version) : new ValueTask(other.AsTask());
    }

    /// <summary>The call, when it was sent at once; else null, and <paramref name="otherwise"/> is how it ends (refused
    /// before anything was sent, or its wait for a slot and room).</summary>
    private PendingCall<TResult>? Start<TArguments, TResult>(
        uint methodId, in TArguments arguments, in CallDeadline deadline, long now, CancellationToken cancellationToken,
        CallStreams? streams, byte[]? metadata, out ValueTask<TResult> otherwise)
        where TArguments : struct
    {
        if (cancellationToken.IsCancellationRequested)
        {
            otherwise = ValueTask.FromCanceled<TResult>(cancellationToken);
            return null;
        }

        if (metadata is not null)
        {
            metadata = MetadataForPeer(metadata, methodId, out Exception? refused);
            if (refused is not null)
            {
                otherwise = ValueTask.FromException<TResult>(refused);
                return null;
            }
        }

        if (_outbound.IsFull || !_slots.TryTake())
        {
            otherwise = InvokeWhenASlotIsFreeAsync<TArguments, TResult>(methodId, arguments, deadline, cancellationToken, streams, metadata);
            return null;
        }

        PendingCall<TResult>? call = StartHoldingSlot<TArguments, TResult>(
            methodId, arguments, deadline, now, cancellationToken, streams, metadata, out Exception? failure);
        otherwise = call is null ? ValueTask.FromException<TResult>(failure!) : default;
        return call;
    }

    /// <summary>
    /// The metadata section to send: null when the peer reads none (it announced no maxMetadataSize: an older Mux, which
    /// would close the connection on the flag); null with <paramref name="refused"/> set when it is over the peer's limit.
    /// </summary>
    [MethodImpl(MethodImplOptions.NoInlining)]
    private byte[]? MetadataForPeer(byte[] metadata, uint methodId, out Exception? refused)
    {
        refused = null;
        int limit = _connection.Peer.MaxMetadataSize;
        if (limit == 0)
        {
            return null;
        }

        int size = MetadataSection.MapSize(metadata);
        if (size > limit)
        {
            string peerOptions = _connection.IsServer ? nameof(MuxClientOptions) : nameof(MuxServerOptions);
            refused = new InvalidOperationException(
                $"The metadata of the call to {MuxServiceRegistry.GetMethodDisplayName(methodId)} is {size} bytes, over the " +
                $"{_connection.PeerName}'s MaxMetadataSize of {limit} bytes ({peerOptions}.MaxMetadataSize, announced in its " +
                $"handshake); the call was not sent. Send less metadata, or raise {peerOptions}.MaxMetadataSize.");
            return null;
        }

        return metadata;
    }

    /// <summary>Holding a slot: rents the call, starts a client call's span, and starts it. Null, with why, when it failed
    /// before anything was sent; its slot is then given back.</summary>
    private PendingCall<TResult>? StartHoldingSlot<TArguments, TResult>(
        uint methodId, in TArguments arguments, in CallDeadline deadline, long now, CancellationToken cancellationToken,
        CallStreams? streams, byte[]? metadata, out Exception? failure)
        where TArguments : struct
    {
        PendingCall<TResult> call = PendingCall<TResult>.Rent(this, methodId, deadline);
        call.Streams = streams;
        call.SlotStripe = _slots.HomeStripe;

        // A server's call to its client runs inside the handler's span, so only a client's calls get one of their own.
        CallTelemetry telemetry = call.Telemetry = _connection.IsServer ? default : CallTelemetry.StartClient(methodId, Peer, Clock, now);
        failure = StartCall(call, methodId, arguments, now, cancellationToken, metadata);
        if (failure is null)
        {
            return call;
        }

        _slots.Release(); // Nothing was sent: the peer will not answer it.
        telemetry.Stop(failure);
        return null;
    }

    /// <summary>Publishes the call, sends its Request (its deadline measured at <paramref name="now"/>) and hooks up its
    /// token. An exception when it failed before anything was sent, the call then back in its pool.</summary>
    private Exception? StartCall<TResult, TArguments>(
        PendingCall<TResult> call, uint methodId, in TArguments arguments, long now, CancellationToken cancellationToken, byte[]? metadata)
        where TArguments : struct
    {
        if (call.Deadline.At <= now)
        {
            // Its deadline passed while it waited to be sent: the peer would only refuse it, and no retry would help.
            Exception expired = CreateTimeoutException(methodId, call.Deadline, " (its time ran out while it waited to be sent; it was not sent)");
            call.Return();
            return expired;
        }

        // A call that did not start the scan may need it sooner or more often than whoever started it.
        if (call.Deadline.IsSet && (_expiryTimer is not null || !TryStartExpiryScan(call.Deadline.At, now, call.Deadline.OwnTimeout)))
        {
            if (call.Deadline.At < Volatile.Read(ref _firstScanAt))
            {
                ScanByDeadline(call.Deadline.At, now);
            }
            else if (call.Deadline.OwnTimeout is { } own)
            {
                ShortenExpiryScan(own);
            }
        }

        // Read before the Request goes out: from then on the call may complete and be reused.
        CallStreams? streams = call.Streams;
        while (true)
        {
            call.CallId = NextCallId();
            if (TryAddPending(call, out bool closed))
            {
                break;
            }

            if (closed)
            {
                call.Return();
                return NotSent(_connection.CloseError);
            }

            // The ids came round to one still in use: take the next.
        }

        // Checked after the add: TryAdd's swap and OnGoAway's barrier are full fences, so either OnGoAway's scan sees this
        // call or this sees _goingAway. If the scan took the call first, the scan is failing it.
        if (_goingAway)
        {
            if (!_pending.TryRemove(call.CallId, call))
            {
                ReleaseIfAbandoned(call.CallId);
                return null;
            }

            call.Return();

            // The peer's last answer may have been read while this call sat in the table: the drain is noticed here.
            NotifyIfDrainedAfterGoAway();
            return GoingAwayNotSent();
        }

        if (streams is not null)
        {
            RegisterStreams(call.CallId, streams); // Before the Request: the peer may stream at once.
        }

        try
        {
            // A call that streams its arguments gets its send window only once its Request is out whole.
            SendRequest(call, methodId, arguments, now, streams?.Sender is null ? null : streams, metadata);
        }
        catch (Exception ex)
        {
            if (_pending.TryRemove(call.CallId, call))
            {
                call.Return();

                // GoAway or StopSending may have come after the check above: this call may be the last.
                NotifyIfDrainedAfterGoAway();

                // SendFrame throws MuxConnectionException only before it queues anything.
                return ex is MuxConnectionException { IsSafeToRetry: false } closed ? NotSent(closed) : ex;
            }

            ReleaseIfAbandoned(call.CallId);
            return null;
        }

        if (!call.NoteRequestQueued())
        {
            // The expiry scan failed the call while its Request was written and left its Cancel to this thread: it goes
            // after the Request, so the peer knows the call it cancels.
            SendCancel(call.CallId);
            return null;
        }

        if (cancellationToken.CanBeCanceled)
        {
            call.RegisterCancellation(cancellationToken);
        }

        return null;
    }

    /// <summary>A call whose Request never went out was taken from the table by another, which is failing it. If the
    /// expiry scan took it, its slot waits for an answer that will never come: it is freed here.</summary>
    private void ReleaseIfAbandoned(uint callId)
    {
        bool abandoned;
        lock (_abandoned)
        {
            abandoned = ForgetAbandonedLocked(callId);
        }

        if (abandoned)
        {
            _slots.Release();
        }
    }

    /// <summary>Notes a call given up on, just taken out of the table: its answer, still to come, frees its slot.</summary>
    private void AbandonLocked(uint callId)
    {
        Debug.Assert(Monitor.IsEntered(_abandoned));
        _abandoned.Add(callId);
        _abandonedCount = _abandoned.Count;
    }

    /// <summary>Forgets a call given up on (its answer came, or its Request never went out): true when it was one.</summary>
    private bool ForgetAbandonedLocked(uint callId)
    {
        Debug.Assert(Monitor.IsEntered(_abandoned));
        bool forgotten = _abandoned.Remove(callId);
        _abandonedCount = _abandoned.Count;
        return forgotten;
    }

    /// <summary>Sends the call's Request: its metadata (checked against the peer's limit already) and, on a client's call,
    /// the deadline left at <paramref name="now"/> and the caller's trace context. A server's calls carry neither.</summary>
    private void SendRequest<TArguments>(
        PendingCall call, uint methodId, in TArguments arguments, long now, CallStreams? whenWritten, byte[]? metadata)
        where TArguments : struct
    {
        uint? remaining = null;
        Activity? trace = null;
        if (_idSpace == FrameFlags.None)
        {
            if (call.Deadline.IsSet)
            {
                // now is the caller's latest reading, so the peer's clock starts from what is really left.
                remaining = DeadlineHeader.RemainingMilliseconds(call.Deadline.At, now, Clock.TimestampFrequency);
            }

            trace = _connection.Peer.ReadsTraceContext ? call.Telemetry.Activity ?? Activity.Current : null;
            // The header carries a W3C traceparent: an activity of another ID format has none to send.
            if (trace is not null && trace.IdFormat != ActivityIdFormat.W3C)
            {
                trace = null;
            }
        }

        var message = new MessagePackBody<TArguments>(arguments, _connection.SerializerOptions);
        var body = new RequestBody<MessagePackBody<TArguments>>(message, remaining, trace, metadata);
        _outbound.SendFrame(FrameType.Request, call.CallId, methodId, ref body, _idSpace | body.Flags, whenWritten);
    }

    /// <summary>The next call id; 0 is reserved for the connection.</summary>
    private uint NextCallId()
    {
        while (true)
        {
            long last = Interlocked.Increment(ref _lastCallId);
            if (last > uint.MaxValue && !_idsCameRound)
            {
                _idsCameRound = true;
            }

            if ((uint)last != 0)
            {
                return (uint)last;
            }
        }
    }

    /// <summary>Adds the call under the id it was just given: false when the table is closed (<paramref name="closed"/>),
    /// or when the ids came round to one still in use, by a call waiting or one given up on whose answer is to come.</summary>
    private bool TryAddPending(PendingCall call, out bool closed)
    {
        // Until the ids come round every id is new; after, most calls find no call given up on.
        if (!_idsCameRound || _abandonedCount == 0)
        {
            return _pending.TryAdd(call, out closed);
        }

        return TryAddPendingUnlessAbandoned(call, out closed);
    }

    /// <summary>Under the lock every move to the abandoned calls holds, so none comes between the look and the add. The
    /// fast path can miss only a call given up on in the few instructions before its add, one that waited through 2^32 ids.</summary>
    [MethodImpl(MethodImplOptions.NoInlining)]
    private bool TryAddPendingUnlessAbandoned(PendingCall call, out bool closed)
    {
        lock (_abandoned)
        {
            closed = false;
            return !_abandoned.Contains(call.CallId) && _pending.TryAdd(call, out closed);
        }
    }

    /// <summary>For tests: the ids come round now, as after 2^32 calls. Only while no call is starting.</summary>
    internal void WrapCallIds()
    {
        Volatile.Write(ref _lastCallId, 1L << 32);
    }
}
