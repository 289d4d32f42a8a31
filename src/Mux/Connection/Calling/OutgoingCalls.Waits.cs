using System.Runtime.CompilerServices;
using Mux.Protocol;
using Mux.Streaming;
using Mux.Transport;

namespace Mux.Connection;

// A call's waits: for a slot or for room in the outbound queue, and for its answer within its deadline and its token.
internal sealed partial class OutgoingCalls
{
    // Callers that wait for room in the outbound queue queue their Requests one at a time through it: the slow path only.
    private readonly SemaphoreSlim _roomGate = new(1, 1);

    // The expiry scan, on the connection's clock: created by the first call with a deadline, disposed by FailAll.
    private ITimer? _expiryTimer;

    // The scan's period in milliseconds: lowered, never raised, by a call whose own timeout is shorter.
    private long _scanPeriodMs;

    // The earliest deadline of the calls made before the scan first runs; long.MinValue once it has. Written under _abandoned's lock.
    private long _firstScanAt = long.MaxValue;

    /// <summary>The call is in the table already, so the expiry scan and its token reach it as they reach a sent call. Its
    /// Request is encoded now, on its caller's thread; whoever frees a slot sends it. Null when the caller awaits the call.</summary>
    private Exception? Enqueue<TResult, TArguments>(
        PendingCall<TResult> call, uint methodId, in TArguments arguments, long now, CancellationToken cancellationToken, byte[]? metadata)
        where TArguments : struct
    {
        uint callId = call.CallId;
        try
        {
            EncodeRequest(call, methodId, arguments, now, metadata);
        }
        catch (Exception ex)
        {
            // Never reuse a buffer a failed serializer may have left in a strange state.
            call.QueuedFrame?.Dispose();
            call.QueuedFrame = null;
            if (_pending.TryRemove(callId, call))
            {
                call.Return();
                NotifyIfDrainedAfterGoAway();
                return ex is MuxConnectionException { IsSafeToRetry: false } closed ? NotSent(closed) : ex;
            }

            // Taken from the table by the close or the expiry scan, which fails it; it held no slot.
            ReleaseIfAbandoned(callId, holdingSlot: false);
            return null;
        }

        switch (_slots.Enqueue(call, out Func<Exception>? refused))
        {
            case SlotQueueing.SlotTaken:
                if (!SendDequeued(call))
                {
                    ReleaseSlot();
                }

                break;
            case SlotQueueing.GivenUp:
                // The expiry scan failed it between its entry in the table and now: never sent.
                call.DropQueuedRequest();
                ReleaseIfAbandoned(callId, holdingSlot: false);
                return null;
            case SlotQueueing.Refused:
                call.DropQueuedRequest();
                if (_pending.TryRemove(callId, call))
                {
                    call.Return();
                    NotifyIfDrainedAfterGoAway();
                    return refused!();
                }

                // The close, GoAway or the expiry scan took it from the table and is failing it.
                ReleaseIfAbandoned(callId, holdingSlot: false);
                return null;
        }

        // After it is queued, so that a cancellation finds it there; a token cancelled already runs the callback now.
        if (cancellationToken.CanBeCanceled)
        {
            call.RegisterCancellation(cancellationToken);
        }

        return null;
    }

    /// <summary>The oldest waiting call takes the slot and this thread sends the bytes its caller encoded: nothing of the caller's
    /// runs here, so the reader loop may. One that cannot be sent passes the slot on.</summary>
    private void ReleaseSlot()
    {
        PendingCall? next = _slots.Release();
        while (next is not null && !SendDequeued(next))
        {
            next = _slots.Release();
        }
    }

    /// <summary>False when not sent, its slot to be passed on: its deadline passed as the slot came (before the expiry scan
    /// saw it), or it was completed meanwhile (given up on, the close, GoAway).</summary>
    private bool SendDequeued(PendingCall call)
    {
        uint callId = call.CallId;
        long now = 0;
        if (call.Deadline.IsSet)
        {
            now = Clock.GetTimestamp();
            if (call.Deadline.At <= now && _pending.TryRemove(callId, call))
            {
                call.MarkUnqueued();
                call.DropQueuedRequest();
                string detail = " (its time ran out while it waited to be sent; it was not sent)";
                call.CompleteWithException(CreateTimeoutException(call.MethodId, call.Deadline, detail));
                NotifyIfDrainedAfterGoAway();
                return false;
            }
        }

        if (!call.TryStartSending())
        {
            // Completed while dequeued, so never sent: its completion is this thread's (PendingCall.CompletedWhileSending).
            call.DropQueuedRequest();
            call.QueueCompletion();
            ReleaseIfAbandoned(callId, holdingSlot: false);
            return false;
        }

        PooledBufferWriter frame = call.QueuedFrame!;
        BufferSegment? message = call.QueuedMessage;
        call.QueuedMessage = null; // The writer's once queued.
        if (call.QueuedWithDeadline)
        {
            uint remaining = DeadlineHeader.RemainingMilliseconds(call.Deadline.At, now, Clock.TimestampFrequency);
            DeadlineHeader.Rewrite(message is null ? frame.Buffer : message.Array, remaining);
        }

        CallStreams? streams = call.Streams;
        _outbound.SendEncodedRequest(frame, message, call.QueuedMessageLength, streams?.Sender is null ? null : streams);
        call.ReleaseQueuedFrame();
        if (!call.TryFinishSending())
        {
            // Completed while its Request was queued: a failed call tells the peer now, after the Request, as one sent at once does.
            if (call.HasFailed)
            {
                SendCancel(callId);
            }

            call.QueueCompletion();
        }

        return true;
    }

    private void FailWaitingCalls(Func<Exception> failure)
    {
        PendingCall? waiting;
        lock (_abandoned)
        {
            // Under this lock a cancellation or the expiry scan takes a waiting call out of the table and the queue
            // together, so none of them finds a call in one and not the other.
            waiting = _slots.Fail(failure);
            for (PendingCall? call = waiting; call is not null; call = call.QueueNext)
            {
                _pending.TryRemove(call.CallId, call);
            }
        }

        while (waiting is not null)
        {
            PendingCall call = waiting;
            waiting = call.QueueNext;
            call.QueueNext = null;
            call.DropQueuedRequest();
            call.CompleteWithException(failure());
        }
    }

    private string WaitedForSlotDetail => $" (it waited for one of the {_connection.PeerName}'s MaxConcurrentCallsPerConnection slots all that time)";

    /// <summary>Holding a slot with the outbound queue over MaxOutboundBytesPerConnection: the peer is not reading.</summary>
    private async ValueTask<TResult> InvokeWhenThereIsRoomAsync<TArguments, TResult>(
        uint methodId, TArguments arguments, CallDeadline deadline, CancellationToken cancellationToken, CallStreams? streams, byte[]? metadata)
        where TArguments : struct
    {
        await EnterRoomGateAsync(methodId, deadline, cancellationToken).ConfigureAwait(false);
        PendingCall<TResult>? call;
        Exception? failure;
        try
        {
            long now = deadline.Now(Clock);
            call = StartCall<TArguments, TResult>(
                methodId, arguments, deadline, now, cancellationToken, streams, metadata, holdingSlot: true, out failure);
        }
        finally
        {
            _roomGate.Release();
        }

        return call is not null ? await new ValueTask<TResult>(call, call.Version).ConfigureAwait(false) : throw failure!;
    }

    /// <summary>The caller leaves the gate once its Request is queued, so the queue passes the limit by at most one Request
    /// each time it drains. A caller that gives up gives its slot back.</summary>
    private async ValueTask EnterRoomGateAsync(uint methodId, CallDeadline deadline, CancellationToken cancellationToken)
    {
        // SemaphoreSlim takes no TimeProvider, so the deadline is a token on the connection's clock (a rare path).
        using CancellationTokenSource? expiry = deadline.IsSet ? new CancellationTokenSource(TimeLeft(deadline), Clock) : null;
        using CancellationTokenSource? linked = expiry is not null && cancellationToken.CanBeCanceled
            ? CancellationTokenSource.CreateLinkedTokenSource(cancellationToken, expiry.Token)
            : null;
        CancellationToken token = linked?.Token ?? expiry?.Token ?? cancellationToken;
        bool entered = false;
        try
        {
            await _roomGate.WaitAsync(token).ConfigureAwait(false);
            entered = true;
            while (_outbound.IsFull && !_connection.IsClosed)
            {
                await _outbound.WaitForRoomAsync().WaitAsync(token).ConfigureAwait(false);
            }
        }
        catch (Exception ex)
        {
            if (entered)
            {
                _roomGate.Release();
            }

            ReleaseSlot(); // Nothing was sent.
            if (ex is OperationCanceledException && expiry is not null)
            {
                // The deadline's token fired, or the caller's: each is reported as the caller knows it.
                if (cancellationToken.IsCancellationRequested)
                {
                    throw new OperationCanceledException(ex.Message, ex, cancellationToken);
                }

                string queued = MuxConnection.DescribeSize(_connection.Settings.MaxOutboundBytes);
                throw CreateTimeoutException(methodId, deadline,
                    $" (it waited all that time to be sent: the connection already had {queued} of requests queued for a " +
                    $"{_connection.PeerName} that is not reading them, {_connection.OptionsName}.MaxOutboundBytesPerConnection)");
            }

            throw;
        }
    }

    /// <summary>Infinite without a deadline, zero once it has passed.</summary>
    private TimeSpan TimeLeft(in CallDeadline deadline)
    {
        ClockDeadline.TryGetRemaining(Clock, deadline.At, out TimeSpan left);
        return left;
    }

    private TimeoutException CreateTimeoutException(uint methodId, in CallDeadline deadline, string detail)
    {
        string method = MuxServiceRegistry.GetMethodDisplayName(methodId);
        if (deadline.InheritedFrom is { } inheritedFrom)
        {
            string sooner = deadline.OwnTimeout is null ? "MuxClientOptions.CallTimeout" : "its own Timeout";
            return new($"The Mux call to {method} did not complete by the deadline it inherited from the call this server handler " +
                $"serves ({inheritedFrom}, MuxCallContext.Current), which came sooner than {sooner}{detail}.");
        }

        string within = deadline.OwnTimeout is { } own
            ? $"{DurationText.Format(own)} (its own Timeout: MuxCallOptions.Timeout, or MuxClientCall.Timeout as an interceptor set it)"
            : $"{DurationText.Format(_timeout)} ({(_connection.IsServer ? "MuxServerOptions.ClientCallTimeout" : "MuxClientOptions.CallTimeout")})";
        return new($"The Mux call to {(_connection.IsServer ? "the client's " : "")}{method} did not complete within {within}{detail}.");
    }

    private TimeoutException CreateExpiredException(PendingCall call) =>
        CreateTimeoutException(call.MethodId, call.Deadline, "");

    /// <summary>At this call's deadline, then every tenth of the shorter timeout: deadlines within about 10% without waking often.</summary>
    [MethodImpl(MethodImplOptions.NoInlining)]
    private bool TryStartExpiryScan(long deadline, long now, TimeSpan? ownTimeout)
    {
        TimeSpan first = deadline > now ? Clock.GetElapsedTime(now, deadline) : TimeSpan.Zero;
        long periodMs = Math.Min(ScanPeriodMilliseconds(_timeout), ScanPeriodMilliseconds(ownTimeout));
        if (periodMs == long.MaxValue)
        {
            periodMs = ScanPeriodMilliseconds(first);
        }

        ITimer created;
        using (ExecutionContext.SuppressFlow())
        {
            TimerCallback scan = static state => ((OutgoingCalls)state!).FailExpiredCalls();
            created = Clock.CreateTimer(scan, this, first, TimeSpan.FromMilliseconds(periodMs));
        }

        bool started = false;
        lock (_abandoned)
        {
            if (_expiryTimer is null)
            {
                // Before the timer is published: a call that sees it reads these as they are for it.
                Volatile.Write(ref _scanPeriodMs, periodMs);
                Volatile.Write(ref _firstScanAt, deadline);
                started = Interlocked.CompareExchange(ref _expiryTimer, created, null) is null;
            }
        }

        if (!started || _connection.IsClosed)
        {
            // Another call started one first, or FailAll may already have disposed the field's.
            created.Dispose();
        }

        return started;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private void ScanByDeadline(long deadline, long now)
    {
        lock (_abandoned)
        {
            if (deadline < _firstScanAt)
            {
                Volatile.Write(ref _firstScanAt, deadline);
                TimeSpan first = deadline > now ? Clock.GetElapsedTime(now, deadline) : TimeSpan.Zero;
                _expiryTimer!.Change(first, TimeSpan.FromMilliseconds(Volatile.Read(ref _scanPeriodMs)));
            }
        }
    }

    /// <summary>A tenth of <paramref name="timeout"/>, within 10 ms and 1 s; long.MaxValue for none or an infinite one.</summary>
    private static long ScanPeriodMilliseconds(TimeSpan? timeout) =>
        timeout is not { } finite || finite == Timeout.InfiniteTimeSpan ? long.MaxValue : Math.Clamp((long)finite.TotalMilliseconds / 10, 10, 1000);

    /// <summary>Keeps a shorter own timeout within about 10% too; the period only shrinks, so a few times per connection at most.</summary>
    [MethodImpl(MethodImplOptions.NoInlining)]
    private void ShortenExpiryScan(TimeSpan ownTimeout)
    {
        long period = ScanPeriodMilliseconds(ownTimeout);
        long current = Volatile.Read(ref _scanPeriodMs);
        while (period < current)
        {
            long seen = Interlocked.CompareExchange(ref _scanPeriodMs, period, current);
            if (seen == current)
            {
                Volatile.Read(ref _expiryTimer)?.Change(TimeSpan.FromMilliseconds(period), TimeSpan.FromMilliseconds(period));
                return;
            }

            current = seen;
        }
    }

    private void FailExpiredCalls()
    {
        List<PendingCall>? expired = null;
        lock (_abandoned)
        {
            if (_firstScanAt != long.MinValue)
            {
                Volatile.Write(ref _firstScanAt, long.MinValue); // Once: every call with a deadline reads it.
            }

            _pending.RemoveWhere(Clock.GetTimestamp(), static (call, now) => call.Deadline.At <= now, ref expired);
            if (expired is null)
            {
                return;
            }

            foreach (PendingCall call in expired)
            {
                // A waiting call leaves the queue with the table, never sent; a sent one waits among the abandoned for its answer.
                if (!_slots.TryUnlink(call))
                {
                    AbandonLocked(call.CallId);
                }
            }
        }

        NotifyIfDrainedAfterGoAway();
        foreach (PendingCall call in expired)
        {
            if (call.IsUnqueued)
            {
                call.DropQueuedRequest();
                call.CompleteWithException(CreateTimeoutException(call.MethodId, call.Deadline, WaitedForSlotDetail));
            }
            else
            {
                GiveUp(call, CreateExpiredException(call));
            }
        }
    }

    /// <summary>Unless something completed the call first; a call still waiting for a slot is never sent.</summary>
    public void Cancel(PendingCall call, CancellationToken token)
    {
        bool removed;
        bool waiting = false;
        lock (_abandoned)
        {
            removed = _pending.TryRemove(call.CallId, call);
            if (removed)
            {
                waiting = _slots.TryUnlink(call);
                if (!waiting)
                {
                    AbandonLocked(call.CallId);
                }
            }
        }

        if (waiting)
        {
            call.DropQueuedRequest();
            call.CompleteWithException(new OperationCanceledException("The Mux call was canceled by the caller.", token));
        }
        else if (removed)
        {
            GiveUp(call, new OperationCanceledException("The Mux call was canceled by the caller.", token));
        }

        NotifyIfDrainedAfterGoAway();
    }

    /// <summary>For a call just moved to the abandoned: its slot stays taken until the peer's handler sees the Cancel and answers.</summary>
    private void GiveUp(PendingCall call, Exception failure)
    {
        call.RecordFailure(failure);
        switch (call.TakeGiveUpTurn())
        {
            case GiveUpTurn.CancelNow:
                SendCancel(call.CallId);
                call.QueueCompletion();
                break;
            case GiveUpTurn.CancelAfterRequest:
                // Its Request is still being written: the caller sends the Cancel after it.
                call.QueueCompletion();
                break;
            default:
                // A waiting call being sent: its sender completes it (SendDequeued).
                break;
        }
    }

    /// <summary>On a closed connection the peer cancels every handler anyway.</summary>
    private void SendCancel(uint callId) =>
        _outbound.TrySendRawFrame(FrameType.Cancel, callId, ReadOnlySpan<byte>.Empty, _idSpace);
}
