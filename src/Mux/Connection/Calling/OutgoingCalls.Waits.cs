using System.Runtime.CompilerServices;
using Mux.Protocol;
using Mux.Streaming;
using Mux.Transport;

namespace Mux.Connection;

// The waits of a call: for a slot and room when it cannot be sent at once, and for its answer within its deadline and its
// caller's token (the expiry scan, Cancel).
internal sealed partial class OutgoingCalls
{
    // Callers that wait for room in the outbound queue queue their Requests one at a time through it: the slow path only.
    private readonly SemaphoreSlim _roomGate = new(1, 1);

    // The expiry scan, on the connection's clock: created by the first call with a deadline, disposed by FailAll.
    private ITimer? _expiryTimer;

    // The scan's period in milliseconds: lowered, never raised, by a call whose own timeout is shorter.
    private long _scanPeriodMs;

    // When the scan first runs: the earliest deadline of the calls made before then; long.MinValue once it has run.
    // Written under _abandoned's lock, with the timer.
    private long _firstScanAt = long.MaxValue;

    /// <summary>The peer runs as many calls as it allows, or is not reading: waits within the call's deadline and token
    /// for a slot, then for room in the outbound queue, then sends.</summary>
    private async ValueTask<TResult> InvokeWhenASlotIsFreeAsync<TArguments, TResult>(
        uint methodId, TArguments arguments, CallDeadline deadline, CancellationToken cancellationToken, CallStreams? streams, byte[]? metadata)
        where TArguments : struct
    {
        try
        {
            await _slots.WaitAsync(TimeLeft(deadline), Clock, cancellationToken).ConfigureAwait(false);
        }
        catch (TimeoutException)
        {
            string detail = $" (it waited for one of the {_connection.PeerName}'s MaxConcurrentCallsPerConnection slots all that time)";
            throw CreateTimeoutException(methodId, deadline, detail);
        }

        bool gated = _outbound.IsFull;
        if (gated)
        {
            await EnterRoomGateAsync(methodId, deadline, cancellationToken).ConfigureAwait(false);
        }

        PendingCall<TResult>? call;
        Exception? failure;
        try
        {
            long now = deadline.Now(Clock);
            call = StartHoldingSlot<TArguments, TResult>(methodId, arguments, deadline, now, cancellationToken, streams, metadata, out failure);
        }
        finally
        {
            if (gated)
            {
                _roomGate.Release();
            }
        }

        return call is not null ? await new ValueTask<TResult>(call, call.Version).ConfigureAwait(false) : throw failure!;
    }

    /// <summary>
    /// Holding a slot, enters <see cref="_roomGate"/> and waits until the outbound queue is under the limit or the
    /// connection closed. The caller leaves the gate once its Request is queued, so the queue passes the limit by at
    /// most one Request each time it drains. A caller that gives up gives its slot back.
    /// </summary>
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

            _slots.Release(); // Nothing was sent.
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

    /// <summary>How long a wait may last: infinite without a deadline, zero once it has passed.</summary>
    private TimeSpan TimeLeft(in CallDeadline deadline)
    {
        ClockDeadline.TryGetRemaining(Clock, deadline.At, out TimeSpan left);
        return left;
    }

    /// <summary>The timeout a call fails with, naming where its deadline came from; <paramref name="detail"/> says what it
    /// waited for.</summary>
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

    /// <summary>Starts the expiry scan once per connection: at this call's deadline, then every tenth of the shorter
    /// timeout, which keeps deadlines within about 10% without waking often. False when another call started it.</summary>
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

    /// <summary>A call whose deadline comes before the scan first runs: the scan runs at it instead.</summary>
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

    /// <summary>A call whose own timeout is shorter than the scan's: scan more often, so its deadline is kept within about
    /// 10% too. The period only shrinks, so this happens a few times per connection at most.</summary>
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
                AbandonLocked(call.CallId);
            }
        }

        NotifyIfDrainedAfterGoAway();
        foreach (PendingCall call in expired)
        {
            GiveUp(call, CreateExpiredException(call));
        }
    }

    /// <summary>The caller's token fired: the call fails as cancelled, unless something completed it first.</summary>
    public void Cancel(PendingCall call, CancellationToken token)
    {
        bool removed;
        lock (_abandoned)
        {
            removed = _pending.TryRemove(call.CallId, call);
            if (removed)
            {
                AbandonLocked(call.CallId);
            }
        }

        if (removed)
        {
            GiveUp(call, new OperationCanceledException("The Mux call was canceled by the caller.", token));
        }

        NotifyIfDrainedAfterGoAway();
    }

    /// <summary>Fails a call given up on, just moved to the abandoned calls, and tells the peer. Its slot stays taken until
    /// the peer answers: the handler runs there until it sees the Cancel.</summary>
    private void GiveUp(PendingCall call, Exception failure)
    {
        // A call taken while its Request is still being written: the caller sends the Cancel after it.
        if (call.MayCancelNow())
        {
            SendCancel(call.CallId);
        }

        call.CompleteWithException(failure);
    }

    /// <summary>Tells the peer a call was given up on; on a closed connection the peer cancels every handler anyway.</summary>
    private void SendCancel(uint callId) =>
        _outbound.TrySendRawFrame(FrameType.Cancel, callId, ReadOnlySpan<byte>.Empty, _idSpace);
}
