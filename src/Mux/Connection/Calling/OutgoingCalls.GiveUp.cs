using System.Runtime.CompilerServices;
using Mux.Protocol;
using Mux.Transport;

namespace Mux.Connection;

// Calls their caller gives up on: the expiry scan that fails calls past their deadline, the
// caller's token (Cancel), the Cancel sent to the peer, and the timeout's message.
internal sealed partial class OutgoingCalls
{
    // Scans the table for expired calls, on the connection's TimeProvider. Created by the first
    // call that has a deadline (TryStartExpiryScan); disposed by FailAll.
    private ITimer? _expiryTimer;

    // The scan's period in milliseconds: set when it starts, lowered (never raised) by a call whose
    // own timeout is shorter (ShortenExpiryScan, CompareExchange).
    private long _scanPeriodMs;

    // When the scan first runs (a timestamp): the deadline of the call that started it, brought
    // forward by a call made before then with an earlier one (ScanByDeadline); long.MinValue once it
    // has run, after which it runs every period. Written under _abandoned's lock, with the timer.
    private long _firstScanAt = long.MaxValue;

    /// <summary>The timeout a call with <paramref name="deadline"/> fails with, naming where the
    /// deadline came from (the served call it inherited it from, else the call's own timeout, else
    /// the side's); <paramref name="detail"/> says what it waited for.</summary>
    private TimeoutException CreateTimeoutException(uint methodId, in CallDeadline deadline, string detail)
    {
        string method = MuxServiceRegistry.GetMethodDisplayName(methodId);
        if (deadline.InheritedFrom is { } inheritedFrom)
        {
            return new($"The Mux call to {method} did not complete by the deadline it inherited from the call this server handler serves ({inheritedFrom}, MuxCallContext.Current), which came sooner than {(deadline.OwnTimeout is null ? "MuxClientOptions.CallTimeout" : "its own Timeout")}{detail}.");
        }

        string within = deadline.OwnTimeout is { } own
            ? $"{DurationText.Format(own)} (its own Timeout: MuxCallOptions.Timeout, or MuxClientCall.Timeout as an interceptor set it)"
            : $"{DurationText.Format(_timeout)} ({(_connection.IsServer ? "MuxServerOptions.ClientCallTimeout" : "MuxClientOptions.CallTimeout")})";
        return new($"The Mux call to {(_connection.IsServer ? "the client's " : "")}{method} did not complete within {within}{detail}.");
    }

    private TimeoutException CreateExpiredException(PendingCall call) =>
        CreateTimeoutException(call.MethodId, call.Deadline, "");

    /// <summary>Starts the expiry scan, once per connection: first at the deadline of the call that
    /// needs it, then every tenth of the shorter of the side's timeout and that call's own (or, with
    /// neither, of that call's time left), which keeps deadlines within about 10% without waking
    /// often. False when another call started it first.</summary>
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
            created = Clock.CreateTimer(static state => ((OutgoingCalls)state!).FailExpiredCalls(), this, first, TimeSpan.FromMilliseconds(periodMs));
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

    /// <summary>A call made before the scan first runs, whose deadline comes before that (a shorter
    /// own timeout, the side's after a longer own, an inherited deadline): the scan first runs at
    /// this deadline instead, which the call would otherwise have waited past.</summary>
    [MethodImpl(MethodImplOptions.NoInlining)]
    private void ScanByDeadline(long deadline, long now)
    {
        lock (_abandoned)
        {
            if (deadline < _firstScanAt)
            {
                Volatile.Write(ref _firstScanAt, deadline);
                _expiryTimer!.Change(deadline > now ? Clock.GetElapsedTime(now, deadline) : TimeSpan.Zero, TimeSpan.FromMilliseconds(Volatile.Read(ref _scanPeriodMs)));
            }
        }
    }

    /// <summary>A tenth of <paramref name="timeout"/>, within 10 ms and 1 s; <see cref="long.MaxValue"/>
    /// for none or an infinite one, which asks for no scan of its own.</summary>
    private static long ScanPeriodMilliseconds(TimeSpan? timeout) =>
        timeout is not { } finite || finite == Timeout.InfiniteTimeSpan ? long.MaxValue : Math.Clamp((long)finite.TotalMilliseconds / 10, 10, 1000);

    /// <summary>A call whose own timeout (MuxCallOptions.Timeout) is shorter than the one the scan
    /// was started for: scan more often from now on, so its deadline is kept within about 10% too.
    /// The period only ever shrinks, so this happens at most a few times per connection.</summary>
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
                // A call waiting for a slot leaves the queue with the table, never sent; a sent one
                // waits among the abandoned for the answer that frees its slot.
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

    /// <summary>The caller's token fired: the call fails as cancelled, unless its answer (or
    /// anything else) completed it first. A call still waiting for a slot is never sent.</summary>
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

    /// <summary>Fails a call its caller gave up on (its token, its deadline), moved from the table
    /// to the abandoned set, and tells the peer (best effort: the connection may be gone). Its slot
    /// stays taken until the peer answers: the handler still runs there until it sees the Cancel.</summary>
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
                // A waiting call being sent: its sender completes it (see SendDequeued).
                break;
        }
    }

    /// <summary>Tells the peer a call was given up on. Closed: the peer cancels every handler of a
    /// closed connection anyway.</summary>
    private void SendCancel(uint callId) =>
        _outbound.TrySendRawFrame(FrameType.Cancel, callId, ReadOnlySpan<byte>.Empty, _idSpace);
}
