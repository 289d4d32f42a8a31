using System.Diagnostics;
using System.Runtime.CompilerServices;
using Mux.Diagnostics;
using Mux.Protocol;
using Mux.Serialization;
using Mux.Streaming;

namespace Mux.Connection;

/// <summary>The caller role of a connection, on either side: each call completes exactly once, within the peer's call cap
/// and the outbound limit, and the peer is told when a caller gives up.</summary>
internal sealed partial class OutgoingCalls
{
    // A client's table holds the calls waiting for one of the server's slots too, so many thousands may be in at once: ids
    // in flight are consecutive, and a table with fewer slots than calls sends the rest through its locked overflow. A
    // server's calls to its client are few, and a server keeps one table per connection.
    private const int ExpectedCallsToServer = 8192;
    private const int ExpectedCallsToClient = 1024;

    private readonly MuxConnection _connection;
    private readonly Outbound _outbound;

    // Sent calls and those waiting for a slot, by id: added by callers, removed by whoever completes them.
    private readonly CallTable<PendingCall> _pending;

    // ServerInitiated on a server's calls to its client, none on a client's: every frame of these calls carries it.
    private readonly FrameFlags _idSpace;

    // For the expiry scan's period and the timeout's message.
    private readonly TimeSpan _timeout;

    // Set once, by the peer's GoAway (reader loop) or StopSending: new calls fail at once.
    private volatile bool _goingAway;

    // The peer's maxConcurrentCalls, replaced from its handshake before any call.
    private volatile CallSlots _slots = new(int.MaxValue);

    // Calls given up on whose answer has not come: the peer still counts them, so their slots stay taken until it does.
    // A call moves here from the table under this lock, so an answer the reader cannot find in the table is found here.
    private readonly HashSet<uint> _abandoned = [];

    // _abandoned.Count, written under its lock: once ids have come round, a call takes the lock only when this is not 0.
    private volatile int _abandonedCount;

    // The last id handed out in the low 32 bits; 64 bits, so that ids coming round are noticed.
    private long _lastCallId;

    // Set by the caller that takes the first id past 2^32, before it uses it: from then on an id may still be in use.
    private volatile bool _idsCameRound;

    public OutgoingCalls(MuxConnection connection, TimeSpan timeout)
    {
        _connection = connection;
        _outbound = connection.Outbound;
        _timeout = timeout;
        _idSpace = connection.IsServer ? FrameFlags.ServerInitiated : FrameFlags.None;
        _pending = new(connection.IsServer ? ExpectedCallsToClient : ExpectedCallsToServer);
    }

    public MuxConnection Connection => _connection;

    /// <summary>Sent calls only, not those waiting for a slot; read without a lock, so exact at quiet moments.</summary>
    public int Count => Math.Max(0, _pending.Count - _slots.Queued);

    public bool IsGoingAway => _goingAway;

    /// <summary>Set by a client closing for good: a call its close leaves unsent fails with this, not "safe to retry" (the client is gone).</summary>
    public Func<MuxConnectionException>? LeftUnsentByClose { get; set; }

    /// <summary>The server's address and port for span tags; null in memory or on a server. Set before any call.</summary>
    public ServerPeer? Peer { get; set; }

    /// <summary>For tests: at a quiet moment the free slots are the peer's cap and no call is abandoned, or a slot leaked.</summary>
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

    public void OnPeerSettings(in PeerSettings peer) => _slots = new CallSlots(peer.MaxConcurrentCalls);

    /// <summary>A client of an older Mux takes no streams on its server's calls and would close the connection on their frames.</summary>
    public void RequireStreams()
    {
        if (!_connection.Peer.TakesStreams)
        {
            throw new NotSupportedException(
                $"The Mux {_connection.PeerName} at {_connection.Name} does not take IAsyncEnumerable streams on the calls its server " +
                "starts (it did not announce serverCallStreams: an older Mux); call it with methods that take and return no stream.");
        }
    }

    /// <summary><paramref name="now"/> is the caller's latest reading of the clock (0 without a deadline), so a call sent at
    /// once reads it no more. A call with <paramref name="streams"/> has no deadline: its token ends it.</summary>
    public ValueTask<TResult> InvokeAsync<TArguments, TResult>(
        uint methodId, in TArguments arguments, in CallDeadline deadline, long now, CancellationToken cancellationToken,
        CallStreams? streams = null, byte[]? metadata = null)
        where TArguments : struct
    {
        PendingCall<TResult>? call = Start(methodId, arguments, deadline, now, cancellationToken, streams, metadata, out ValueTask<TResult> other);
        return call is not null ? new ValueTask<TResult>(call, call.Version) : other;
    }

    public ValueTask InvokeAsync<TArguments>(
        uint methodId, in TArguments arguments, in CallDeadline deadline, long now, CancellationToken cancellationToken, byte[]? metadata = null)
        where TArguments : struct
    {
        PendingCall<VoidResult>? call = Start(methodId, arguments, deadline, now, cancellationToken, null, metadata, out ValueTask<VoidResult> other);
        // Otherwise a Task already, or one more Task on the rare wait for room.
        return call is not null ? new ValueTask(call, call.Version) : new ValueTask(other.AsTask());
    }

    /// <summary>Null when the call was refused unsent, or waits for room: <paramref name="otherwise"/> is then how it ends.</summary>
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

        bool holdingSlot = _slots.TryTake();
        if (holdingSlot && _outbound.IsFull)
        {
            otherwise = InvokeWhenThereIsRoomAsync<TArguments, TResult>(methodId, arguments, deadline, cancellationToken, streams, metadata);
            return null;
        }

        // Without a slot the call waits for one as itself (see CallSlots), awaited as a sent call is.
        PendingCall<TResult>? call = StartCall<TArguments, TResult>(
            methodId, arguments, deadline, now, cancellationToken, streams, metadata, holdingSlot, out Exception? failure);
        otherwise = call is null ? ValueTask.FromException<TResult>(failure!) : default;
        return call;
    }

    /// <summary>Null when the peer reads no metadata (an older Mux, which would close the connection on the flag); null with
    /// <paramref name="refused"/> set when it is over the peer's limit.</summary>
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

    /// <summary>Null, with why, when the call failed before anything was sent; a slot it held is then given back.</summary>
    private PendingCall<TResult>? StartCall<TArguments, TResult>(
        uint methodId, in TArguments arguments, in CallDeadline deadline, long now, CancellationToken cancellationToken,
        CallStreams? streams, byte[]? metadata, bool holdingSlot, out Exception? failure)
        where TArguments : struct
    {
        PendingCall<TResult> call = PendingCall<TResult>.Rent(this, methodId, deadline);
        call.Streams = streams;

        // A server's call to its client runs inside the handler's span, so only a client's calls get one of their own.
        CallTelemetry telemetry = call.Telemetry = _connection.IsServer ? default : CallTelemetry.StartClient(methodId, Peer, Clock, now);
        failure = StartCall(call, methodId, arguments, now, cancellationToken, metadata, holdingSlot);
        if (failure is null)
        {
            return call;
        }

        if (holdingSlot)
        {
            ReleaseSlot(); // Nothing was sent: the peer will not answer it.
        }

        telemetry.Stop(failure);
        return null;
    }

    /// <summary>An exception when the call failed before anything was sent or queued, the call then back in its pool.</summary>
    private Exception? StartCall<TResult, TArguments>(
        PendingCall<TResult> call, uint methodId, in TArguments arguments, long now, CancellationToken cancellationToken, byte[]? metadata,
        bool holdingSlot)
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
                ReleaseIfAbandoned(call.CallId, holdingSlot);
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

        if (!holdingSlot)
        {
            return Enqueue(call, methodId, arguments, now, cancellationToken, metadata);
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

            ReleaseIfAbandoned(call.CallId, holdingSlot: true);
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
    /// expiry scan took it, its slot (if it held one) waits for an answer that will never come: it is freed here.</summary>
    private void ReleaseIfAbandoned(uint callId, bool holdingSlot)
    {
        bool abandoned;
        lock (_abandoned)
        {
            abandoned = ForgetAbandonedLocked(callId);
        }

        if (abandoned && holdingSlot)
        {
            ReleaseSlot();
        }
    }

    /// <summary>For a call just taken out of the table: its answer, still to come, frees its slot.</summary>
    private void AbandonLocked(uint callId)
    {
        Debug.Assert(Monitor.IsEntered(_abandoned));
        _abandoned.Add(callId);
        _abandonedCount = _abandoned.Count;
    }

    private bool ForgetAbandonedLocked(uint callId)
    {
        Debug.Assert(Monitor.IsEntered(_abandoned));
        bool forgotten = _abandoned.Remove(callId);
        _abandonedCount = _abandoned.Count;
        return forgotten;
    }

    private void SendRequest<TArguments>(
        PendingCall call, uint methodId, in TArguments arguments, long now, CallStreams? whenWritten, byte[]? metadata)
        where TArguments : struct
    {
        var body = RequestBodyOf(call, arguments, now, metadata);
        _outbound.SendFrame(FrameType.Request, call.CallId, methodId, ref body, _idSpace | body.Flags, whenWritten);
    }

    /// <summary>Into the call's own buffer, for whoever frees a slot to send.</summary>
    private void EncodeRequest<TArguments>(PendingCall call, uint methodId, in TArguments arguments, long now, byte[]? metadata)
        where TArguments : struct
    {
        var body = RequestBodyOf(call, arguments, now, metadata);
        call.QueuedWithDeadline = (body.Flags & FrameFlags.Deadline) != 0;
        PooledBufferWriter frame = call.QueuedFrame ??= new PooledBufferWriter();
        _outbound.EncodeRequest(call.CallId, methodId, ref body, _idSpace | body.Flags, frame, out call.QueuedMessage, out call.QueuedMessageLength);
    }

    private RequestBody<MessagePackBody<TArguments>> RequestBodyOf<TArguments>(PendingCall call, in TArguments arguments, long now, byte[]? metadata)
        where TArguments : struct
    {
        uint? remaining = null;
        Activity? trace = null;
        if (_idSpace == FrameFlags.None) // A server's calls carry no deadline and no trace context.
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
        return new RequestBody<MessagePackBody<TArguments>>(message, remaining, trace, metadata);
    }

    /// <summary>0 is reserved for the connection.</summary>
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

    /// <summary>False when the table is closed, or the ids came round to one still in use (waiting, or given up on).</summary>
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
