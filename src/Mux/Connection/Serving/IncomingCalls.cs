using System.Diagnostics;
using System.Diagnostics.CodeAnalysis;
using Mux.Diagnostics;
using Mux.Protocol;

namespace Mux.Connection;

/// <summary>
/// The serving role of a connection: the calls its peer makes to this side, on either side (a
/// server's calls from its client, a client's calls from its server). It runs each Request's
/// handler on the thread pool (never on the reader loop), caps the calls running at once (a
/// Request past the cap this side announced is refused, never queued), relays Cancel and stream
/// frames to the running call, answers each call exactly once, and keeps the line a GoAway draws:
/// every call up to its id is served, none above it.
/// </summary>
internal sealed partial class IncomingCalls
{
    private readonly MuxConnection _connection;
    private readonly Outbound _outbound;

    // What this side serves. Shared with the other connections of the server or client.
    private readonly ServiceMethods _methods;

    // One slot per call allowed to run at once (the cap this side announced). Taken by the reader
    // loop; given back by a call just before its answer is queued, so a caller that sends its next
    // request on reading the answer always finds the slot free.
    private readonly CallSlots _slots;
    private readonly int _maxConcurrentCalls;

    // Running calls by id, for Cancel and stream frames and for cancelling everything on close.
    // Lock-free in steady state; the reader loop is its only adder, each call's finisher its remover.
    private readonly CallTable<IncomingCall> _calls;

    // Finished calls kept for the next requests (rented by the reader loop, returned by finishers).
    private readonly IncomingCallPool _pool = new();

    // Taken when GoAway begins, and by the reader loop only after GoAway has begun: requests in
    // steady state never take it.
    private readonly Lock _goAwayLock = new();

    // The highest call id of any Request read so far. Written only by the reader loop; read by
    // BeginGoAway to choose the id GoAway carries.
    private volatile uint _highestReceivedCallId;

    // Whether GoAway was sent, and the id it carried: every call with an id up to it is served
    // (including ones that arrive later: ids may reach the wire slightly out of order) and none
    // above it. Written under _goAwayLock, and the id read only under it. A call being dispatched at
    // the same moment is on one side of the line or the other, never both: Dispatch writes
    // _highestReceivedCallId, then (after a full fence) reads _goingAway; BeginGoAway writes
    // _goingAway, then (after a full fence) reads _highestReceivedCallId, so one sees the other.
    private volatile bool _goingAway;
    private uint _goAwayCallId;

    // Whether the peer has ended its stream (it sends nothing more) after GoAway. Written under
    // _goAwayLock once _goingAway is set; read by finishing calls without the lock.
    private volatile bool _peerFinished;

    private readonly TaskCompletionSource _drained = new(TaskCreationOptions.RunContinuationsAsynchronously);

    // TimeProvider timestamp of when the last running call finished (or the connection opened);
    // kept only when TracksIdle. Written by OnCallFinished; read by the connection's timer.
    private long _idleSince;

    public IncomingCalls(MuxConnection connection, ServiceMethods methods, ConnectionSettings settings)
    {
        _connection = connection;
        _outbound = connection.Outbound;
        _methods = methods;
        _maxConcurrentCalls = settings.MaxConcurrentCalls;
        _slots = new CallSlots(_maxConcurrentCalls);
        _calls = new CallTable<IncomingCall>(_maxConcurrentCalls);
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

    /// <summary>The highest call id received so far (for GoAway, tests and diagnostics).</summary>
    public uint HighestReceivedCallId => _highestReceivedCallId;

    /// <summary>Whether GoAway was sent: calls above its id are not run.</summary>
    public bool IsGoingAway => _goingAway;

    /// <summary>When the last running call finished, as a TimeProvider timestamp (see TracksIdle).</summary>
    public long IdleSince => Volatile.Read(ref _idleSince);

    /// <summary>Starts the idle period now: the handshake has completed, and the connection serves
    /// calls from here on (see TracksIdle).</summary>
    public void RestartIdle()
    {
        if (TracksIdle)
        {
            Volatile.Write(ref _idleSince, _connection.TimeProvider.GetTimestamp());
        }
    }

    /// <summary>Completes once GoAway was sent, no call runs and the peer has ended its stream (or
    /// the connection closed).</summary>
    public Task Drained => _drained.Task;

    /// <summary>A Request of the peer's, with room for its answer (the reader loop waits for room
    /// first: Inbound.OnFrameWhenRoomAsync). Reader loop only.</summary>
    public void OnRequest(Frame frame)
    {
        NoteReceived(frame.CallId);
        if (!_slots.TryTake())
        {
            RefuseOverLimit(frame);
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
            _slots.Release();
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

        // Counted as running before _goingAway is read (TryAdd's swap and increment are full fences
        // that pair with BeginGoAway), so a drain cannot find the connection idle meanwhile. The
        // table is never closed, so a false here is a reused id.
        if (!_calls.TryAdd(call, out _))
        {
            // This call never runs nor finishes: the pooled segments of a Request that arrived in
            // fragments, which Start took over from the reader loop, go back here or never.
            call.ReleaseArguments();
            ThrowCallIdReused(frame.CallId);
        }

        if (_connection.IsClosed || (_goingAway && IsAboveGoAway(frame.CallId)))
        {
            // Closed since the reader loop looked (on another thread: a stop out of patience, a
            // timeout): read after the add (a full fence, as is the close's publish before its
            // CancelAll looks at the table), so either CancelAll cancels this call or this sees the
            // close; run, it would wait on a token nothing cancels. Or above the id GoAway carried:
            // the caller fails this call itself ("not run, safe to retry"). Either way it must not run.
            call.ReleaseArguments();
            OnCallFinished(call);
            return;
        }

        if (IsObserved && CallTelemetry.IsObserved(MuxTelemetry.ServerCallDuration))
        {
            call.Telemetry = CallTelemetry.StartServer(call.MethodId, frame.TraceContext, _connection.TimeProvider, _connection.Inbound.ArrivalTimestamp);
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

    /// <summary>The peer's caller gave up. Unknown ids are calls that already finished; a call
    /// found may finish meanwhile, but it cannot be reused for another request before this
    /// (reader loop) thread dispatches again. Reader loop only.</summary>
    public void OnCancel(uint callId) => _calls.Find(callId)?.RequestCancel();

    /// <summary>An item of the stream the caller sends a running call. Reader loop only.</summary>
    public void OnStreamItem(in Frame frame) => _calls.Find(frame.CallId)?.OnStreamItem(frame.Payload);

    /// <summary>The end of the stream the caller sends a running call. Reader loop only.</summary>
    public void OnStreamEnd(in Frame frame) => _calls.Find(frame.CallId)?.OnStreamEnd(frame.Payload);

    /// <summary>Credit for the stream a running call returns. Reader loop only.</summary>
    public void OnStreamCredit(uint callId, uint count) => _calls.Find(callId)?.OnStreamCredit(count);

    /// <summary>Gives back the slot a call held (see <see cref="IncomingCall.ReleaseSlot"/>).</summary>
    public void ReleaseSlot() => _slots.Release();

    /// <summary>Takes a finished (answered or not) or refused call out of the table and keeps its
    /// object for reuse; frees its slot if its answer did not already.</summary>
    public void OnCallFinished(IncomingCall call)
    {
        // The remove's decrement is a full fence before _peerFinished is read; OnPeerFinishedSending
        // writes _peerFinished before it counts, so one of the two completes the drain. The count
        // is summed over its stripes only when someone needs it (idle tracking, a drain): per call
        // the remove writes this core's stripe and nothing shared.
        bool removed = _calls.TryRemove(call.CallId, call);
        Debug.Assert(removed, "A call is removed once, by its finisher.");
        call.ReleaseSlot(); // Only if no answer was queued (refused after GoAway, or the connection closed).
        _pool.Return(call);
        bool peerFinished = _peerFinished;
        if (!TracksIdle && !peerFinished)
        {
            return;
        }

        // The sum never misses a call added before it began (StripedCounter); one the reader adds
        // meanwhile it may: at worst the idle clock restarts early (the timer checks Count again
        // before closing); during a drain nothing is added any more.
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

    /// <summary>Draws the GoAway line, once: returns the id GoAway carries (the highest received so
    /// far), every call up to which is served and none above.</summary>
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

    /// <summary>The peer ended its stream. After GoAway it is done sending: the drain completes once
    /// the running calls finish, and true keeps the connection open for their answers. Otherwise it
    /// left: false closes the connection. Reader loop only.</summary>
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
