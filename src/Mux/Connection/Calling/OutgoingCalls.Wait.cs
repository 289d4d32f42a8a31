using Mux.Streaming;

namespace Mux.Connection;

// The slow path of a call that cannot be sent at once: its wait for one of the peer's call slots,
// then for room in the outbound queue, within its deadline and token.
internal sealed partial class OutgoingCalls
{
    // Lets callers that wait for room in the outbound queue (MaxOutboundBytesPerConnection) queue
    // their requests one at a time. Taken only on that slow path; never by a call that finds room.
    private readonly SemaphoreSlim _roomGate = new(1, 1);

    /// <summary>The socket is behind (the peer is not reading) or the peer runs as many calls as it
    /// allows: wait (asynchronously, cancellably, within the call's deadline) for one of ours to be
    /// answered, then for room in the outbound queue, then send.</summary>
    private async ValueTask<TResult> InvokeWhenASlotIsFreeAsync<TArguments, TResult>(uint methodId, TArguments arguments, CallDeadline deadline, CancellationToken cancellationToken, CallStreams? streams, byte[]? metadata)
        where TArguments : struct
    {
        try
        {
            await _slots.WaitAsync(TimeLeft(deadline), Clock, cancellationToken).ConfigureAwait(false);
        }
        catch (TimeoutException)
        {
            throw CreateTimeoutException(methodId, deadline, $" (it waited for one of the {_connection.PeerName}'s MaxConcurrentCallsPerConnection slots all that time)");
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
            call = StartHoldingSlot<TArguments, TResult>(methodId, arguments, deadline, deadline.Now(Clock), cancellationToken, streams, metadata, out failure);
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
    /// Holding a slot, waits until the outbound queue is under MaxOutboundBytesPerConnection (the
    /// writer took it, which it does once the socket accepted the previous batch) or the connection
    /// closed (the send then fails as "not run"), then holds <see cref="_roomGate"/>: the caller
    /// releases it once its request is queued, so waiters go one at a time and the queue passes the
    /// limit by at most one request each time it drains, instead of by every waiter's at once. A
    /// caller that gives up queues nothing and gives its slot back.
    /// </summary>
    private async ValueTask EnterRoomGateAsync(uint methodId, CallDeadline deadline, CancellationToken cancellationToken)
    {
        // SemaphoreSlim takes no TimeProvider, so the deadline is a token on the connection's
        // clock, one for the whole wait. Rare path (the peer stopped reading): allocations are fine.
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
                throw cancellationToken.IsCancellationRequested
                    ? new OperationCanceledException(ex.Message, ex, cancellationToken)
                    : CreateTimeoutException(methodId, deadline, $" (it waited all that time to be sent: the connection already had {MuxConnection.DescribeSize(_connection.Settings.MaxOutboundBytes)} of requests queued for a {_connection.PeerName} that is not reading them, {_connection.OptionsName}.MaxOutboundBytesPerConnection)");
            }

            throw;
        }
    }

    /// <summary>How long a wait may last before the call's deadline: infinite without one, zero
    /// once it has passed (the wait then times out at once).</summary>
    private TimeSpan TimeLeft(in CallDeadline deadline)
    {
        ClockDeadline.TryGetRemaining(Clock, deadline.At, out TimeSpan left);
        return left;
    }
}
