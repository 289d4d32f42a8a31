using System.Diagnostics;
using System.Diagnostics.CodeAnalysis;
using Mux.Diagnostics;
using Mux.Protocol;

namespace Mux.Connection;

/// <summary>The serving role of a connection, on either side: runs the peer's Requests on the thread pool, refuses one past the
/// cap this side announced, relays Cancel and stream frames, answers each call exactly once, and keeps the line a GoAway
/// draws: every call up to its id is served, none above. Its On… methods run on the reader loop.</summary>
internal sealed partial class IncomingCalls
{
    private readonly MuxConnection _connection;
    private readonly Outbound _outbound;

    // What this side serves. Shared with the other connections of the server or client.
    private readonly ServiceMethods _methods;

    // One slot per call allowed to run at once. Taken by the reader loop; given back just before a call's answer is queued,
    // so a caller that sends its next request on reading the answer always finds the slot free.
    private readonly CallSlots _slots;
    private readonly int _maxConcurrentCalls;

    // The server's cap across its connections, taken after the slot and given back with it; null without one (and on a client).
    private readonly ServerCallLimit? _serverLimit;

    // Running calls by id, for Cancel, stream frames and the close. Added by the reader loop only, removed by each finisher.
    private readonly CallTable<IncomingCall> _calls;

    // Finished calls kept for the next requests (rented by the reader loop, returned by finishers).
    private readonly IncomingCallPool _pool = new();

    // Taken when GoAway begins, and by the reader loop only after that: requests in steady state never take it.
    private readonly Lock _goAwayLock = new();

    // Written only by the reader loop; read by BeginGoAway to choose the id GoAway carries.
    private volatile uint _highestReceivedCallId;

    // Whether GoAway was sent, and its id: every call up to it is served (also ones that arrive later: ids may reach the wire
    // slightly out of order), none above. Written under _goAwayLock, the id read only under it. A call dispatched meanwhile
    // is on one side of the line, never both: Dispatch writes _highestReceivedCallId, then (after a full fence) reads
    // _goingAway; BeginGoAway writes _goingAway, then (after a full fence) reads _highestReceivedCallId: one sees the other.
    private volatile bool _goingAway;
    private uint _goAwayCallId;

    // Whether the peer ended its stream after GoAway. Written under _goAwayLock once _goingAway is set; read without it.
    private volatile bool _peerFinished;

    private readonly TaskCompletionSource _drained = new(TaskCreationOptions.RunContinuationsAsynchronously);

    // When the last running call finished (or the connection opened), kept only when TracksIdle; read by the connection's timer.
    private long _idleSince;

    public IncomingCalls(MuxConnection connection, ServiceMethods methods, ConnectionSettings settings)
    {
        _connection = connection;
        _outbound = connection.Outbound;
        _methods = methods;
        _maxConcurrentCalls = settings.MaxConcurrentCalls;
        _slots = new CallSlots(_maxConcurrentCalls);
        _calls = new CallTable<IncomingCall>(_maxConcurrentCalls);
        _serverLimit = settings.ServerCallLimit;
        IdSpace = settings.IsServer ? FrameFlags.None : FrameFlags.ServerInitiated;
        SendsDetailedErrors = settings.SendsDetailedErrors;
        PropagatesCallContext = settings.PropagatesCallContext;
        IsObserved = settings.IsServer; // A client's served calls run inside its server's span.
        Interceptors = settings.Interceptors;
        TracksIdle = settings.TracksIdle;
        _idleSince = settings.TimeProvider.GetTimestamp();
    }

    public MuxConnection Connection => _connection;

    public Outbound Outbound => _outbound;

    /// <summary>The id space of these calls, carried by every frame of them: ServerInitiated when a
    /// client serves its server's calls, none on a server.</summary>
    public FrameFlags IdSpace { get; }

    // From the side's settings (see ConnectionSettings). A server observes its calls as spans and durations.
    public bool SendsDetailedErrors { get; }

    public bool PropagatesCallContext { get; }

    public bool IsObserved { get; }

    public IMuxServerInterceptor[] Interceptors { get; }

    public bool TracksIdle { get; }

    public int Count => _calls.Count;

    public uint HighestReceivedCallId => _highestReceivedCallId;

    public bool IsGoingAway => _goingAway;

    public long IdleSince => Volatile.Read(ref _idleSince);

    /// <summary>Starts the idle period now: the handshake has completed, and the connection serves calls from here on.</summary>
    public void RestartIdle()
    {
        if (TracksIdle)
        {
            Volatile.Write(ref _idleSince, _connection.TimeProvider.GetTimestamp());
        }
    }

    /// <summary>Completes once GoAway was sent, no call runs and the peer has ended its stream (or the connection closed).</summary>
    public Task Drained => _drained.Task;

    /// <summary>A Request, with room for its answer (Inbound.OnFrameWhenRoomAsync waited for it).</summary>
    public void OnRequest(Frame frame)
    {
        NoteReceived(frame.CallId);
        if (!_slots.TryTake())
        {
            RefuseOverLimit(frame);
        }
        else if (_serverLimit is { } limit && !limit.TryEnter())
        {
            // Before the method is looked up or anything is rented: the refusal costs the server one Error frame.
            _slots.Release();
            RefuseOverloaded(frame.CallId, limit);
        }
        else
        {
            Dispatch(frame);
        }
    }

    private void NoteReceived(uint callId)
    {
        if (callId > _highestReceivedCallId)
        {
            _highestReceivedCallId = callId;
        }
    }

    /// <summary>Starts a call on the thread pool. Caller has taken a slot for it.</summary>
    private void Dispatch(Frame frame)
    {
        if (!_methods.TryGet(frame.MethodId, out ServiceMethod? method))
        {
            ReleaseSlot();
            RefuseUnknownMethod(frame.CallId, frame.MethodId);
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

            deadline = DeadlineHeader.ToTimestamp(_connection.TimeProvider, _connection.Inbound.ArrivalTimestamp, frame.RemainingMilliseconds);
        }

        IncomingCall call = _pool.TryRent() ?? new IncomingCall(this);
        call.Start(frame.CallId, method, frame.Payload, deadline, frame.HasMetadata);

        // Counted as running before _goingAway is read (TryAdd's interlocked increment is a full fence that pairs with
        // BeginGoAway's), so a drain cannot find the connection idle meanwhile. The table is never closed: false is a reused id.
        if (!_calls.TryAdd(call, out _))
        {
            // It never runs nor finishes: the pooled segments of a fragmented Request, which Start took, go back here or never,
            // and so does a server-wide permit, which outlives this connection.
            call.ReleaseArguments();
            call.ReleaseSlot();
            ThrowCallIdReused(frame.CallId);
        }

        if (_connection.IsClosed || (_goingAway && IsAboveGoAway(frame.CallId)))
        {
            // Closed since the reader loop looked (a stop out of patience, a timeout): read after the add, whose interlocked
            // count and swap are full fences, as the close's compare-and-swap is before CancelAll reads the table, so
            // CancelAll cancels this call or this sees the close; run, it would wait on a token nothing cancels. Or above
            // GoAway's id: the caller fails it ("not run, safe to retry").
            call.ReleaseArguments();
            OnCallFinished(call);
            return;
        }

        if (IsObserved && CallTelemetry.IsObserved(MuxTelemetry.ServerCallDuration))
        {
            call.Telemetry = CallTelemetry.StartServer(
                call.MethodId, frame.TraceContext, _connection.TimeProvider, _connection.Inbound.ArrivalTimestamp);
        }

        ThreadPool.UnsafeQueueUserWorkItem(call, preferLocal: false);
    }

    private bool IsAboveGoAway(uint callId)
    {
        lock (_goAwayLock)
        {
            return callId > _goAwayCallId;
        }
    }

    [DoesNotReturn]
    private void ThrowCallIdReused(uint callId) =>
        throw new MuxProtocolException($"The {_connection.PeerName} reused call id {callId} while that call was still running.");

    /// <summary>An unknown id is a call that has finished. One found may finish meanwhile, but cannot serve another request
    /// before the reader loop, this thread, dispatches again.</summary>
    public void OnCancel(uint callId) => _calls.Find(callId)?.RequestCancel();

    public void OnStreamItem(in Frame frame) => _calls.Find(frame.CallId)?.OnStreamItem(frame.Payload);

    public void OnStreamEnd(in Frame frame) => _calls.Find(frame.CallId)?.OnStreamEnd(frame.Payload);

    public void OnStreamCredit(uint callId, uint count) => _calls.Find(callId)?.OnStreamCredit(count);

    /// <summary>Gives back what a dispatched call holds: its slot on this connection and, under a server-wide cap, its permit.</summary>
    public void ReleaseSlot()
    {
        _slots.Release();
        _serverLimit?.Exit();
    }

    /// <summary>Takes a finished or refused call out of the table and keeps it for reuse; frees its slot if its answer did not.</summary>
    public void OnCallFinished(IncomingCall call)
    {
        // The remove's interlocked decrement is a full fence before _peerFinished is read; OnPeerFinishedSending writes
        // _peerFinished before it reads the count, so one of the two completes the drain.
        bool removed = _calls.TryRemove(call.CallId, call);
        Debug.Assert(removed, "A call is removed once, by its finisher.");
        call.ReleaseSlot(); // Only if no answer was queued (refused after GoAway, or the connection closed).
        _pool.Return(call);
        bool peerFinished = _peerFinished;
        if (!TracksIdle && !peerFinished)
        {
            return;
        }

        // A call added after the read is missed: the idle clock restarts early at worst (the timer checks again); a drain adds none.
        if (_calls.Count == 0)
        {
            if (TracksIdle)
            {
                Volatile.Write(ref _idleSince, _connection.TimeProvider.GetTimestamp());
            }

            if (peerFinished)
            {
                _drained.TrySetResult();
            }
        }
    }

    /// <summary>Draws the GoAway line, once: returns the id GoAway carries, the highest received so far.</summary>
    public uint BeginGoAway()
    {
        lock (_goAwayLock)
        {
            if (!_goingAway)
            {
                _goingAway = true;
                Interlocked.MemoryBarrier(); // Pairs with Dispatch: see _goingAway.
                _goAwayCallId = _highestReceivedCallId;
            }

            return _goAwayCallId;
        }
    }

    /// <summary>The peer ended its stream. After GoAway the drain completes once the running calls finish, and true keeps the
    /// connection open for their answers; otherwise the peer left, and false closes it.</summary>
    public bool OnPeerFinishedSending()
    {
        lock (_goAwayLock)
        {
            if (!_goingAway)
            {
                return false;
            }

            _peerFinished = true;
        }

        Interlocked.MemoryBarrier(); // Pairs with OnCallFinished's decrement: see there.
        if (_calls.Count == 0)
        {
            _drained.TrySetResult();
        }

        return true;
    }

    /// <summary>The connection closed: the drain is over, and every running handler is cancelled.</summary>
    public void CancelAll()
    {
        _drained.TrySetResult();
        foreach (IncomingCall call in _calls.Snapshot())
        {
            call.RequestCancel();
        }
    }
}
