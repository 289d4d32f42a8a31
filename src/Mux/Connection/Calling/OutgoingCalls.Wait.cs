using Mux.Protocol;
using Mux.Streaming;

namespace Mux.Connection;

// The calls that cannot be sent at once: one that finds none of the peer's call slots free waits
// as itself, its Request encoded, in CallSlots' queue, and whoever frees a slot sends it; one that
// holds a slot but finds the outbound queue over its limit waits for room (a rare path).
internal sealed partial class OutgoingCalls
{
    // Lets callers that wait for room in the outbound queue (MaxOutboundBytesPerConnection) queue
    // their requests one at a time. Taken only on that slow path; never by a call that finds room.
    private readonly SemaphoreSlim _roomGate = new(1, 1);

    /// <summary>
    /// Queues a call that found no free slot, in the pending table already (so that the expiry scan
    /// and its token reach it as they reach a sent call): its Request is encoded now, on its
    /// caller's thread, into the call's own buffer, and whoever frees a slot sends it
    /// (<see cref="ReleaseSlot"/>). Returns an exception when the call failed before it was queued
    /// (the call object is then back in its pool); null when the caller awaits the call.
    /// </summary>
    private Exception? Enqueue<TResult, TArguments>(PendingCall<TResult> call, uint methodId, in TArguments arguments, long now, CancellationToken cancellationToken, byte[]? metadata)
        where TArguments : struct
    {
        uint callId = call.CallId;
        try
        {
            EncodeRequest(call, methodId, arguments, now, metadata);
        }
        catch (Exception ex)
        {
            // Never reuse a buffer that a failed serializer may have left in a strange state.
            call.QueuedFrame?.Dispose();
            call.QueuedFrame = null;
            if (_pending.TryRemove(callId, call))
            {
                call.Return();
                return ex is MuxConnectionException { IsSafeToRetry: false } closed ? NotSent(closed) : ex;
            }

            // The close or the expiry scan removed the call first and is failing it; a call the scan
            // gave up on waits among the abandoned for an answer that will not come.
            ForgetAbandoned(callId);
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
                ForgetAbandoned(callId);
                return null;
            case SlotQueueing.Refused:
                call.DropQueuedRequest();
                if (_pending.TryRemove(callId, call))
                {
                    call.Return();
                    NotifyIfDrainedAfterGoAway();
                    return refused!();
                }

                // The close (or GoAway, or the scan) took it from the table and is failing it.
                ForgetAbandoned(callId);
                return null;
        }

        // After it is queued, so that a cancellation finds it in the queue; a token already
        // cancelled runs the callback here and now.
        if (cancellationToken.CanBeCanceled)
        {
            call.RegisterCancellation(cancellationToken);
        }

        return null;
    }

    /// <summary>Gives a slot back: the oldest call waiting for one takes it, and this thread sends its
    /// Request (bytes encoded by its caller: nothing of the caller's runs here, so the reader loop may
    /// do this). A call that cannot be sent passes the slot on.</summary>
    private void ReleaseSlot()
    {
        PendingCall? next = _slots.Release();
        while (next is not null && !SendDequeued(next))
        {
            next = _slots.Release();
        }
    }

    /// <summary>
    /// Sends a call that waited for a slot and holds one now, its deadline header brought up to date.
    /// False when it was not sent, its slot to be passed on: its deadline passed as the slot came
    /// (before the expiry scan, every tenth of the timeout, saw it), or it was completed meanwhile
    /// (given up on, the close, GoAway).
    /// </summary>
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
                call.CompleteWithException(CreateTimeoutException(call.MethodId, call.Deadline, " (its time ran out while it waited to be sent; it was not sent)"));
                NotifyIfDrainedAfterGoAway();
                return false;
            }
        }

        if (!call.TryStartSending())
        {
            // Completed while dequeued, so never sent: the call is ours to complete (see
            // PendingCall.CompletedWhileSending). One given up on waits among the abandoned.
            call.DropQueuedRequest();
            call.QueueCompletion();
            ForgetAbandoned(callId);
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
            // Completed while its Request was queued: a call given up on (or ended by the connection)
            // tells the peer now, after the Request, as a call sent at once does.
            if (call.HasFailed)
            {
                SendCancel(callId);
            }

            call.QueueCompletion();
        }

        return true;
    }

    /// <summary>No call waits for a slot from now on (the connection closes, or sends no new call):
    /// each that waits fails, never sent, with an exception <paramref name="failure"/> makes for it.</summary>
    private void FailWaitingCalls(Func<Exception> failure)
    {
        PendingCall? waiting;
        lock (_abandoned)
        {
            // Under the lock a cancellation or the expiry scan takes a waiting call out of the table
            // and the queue in, so that none of them finds a call in one and not the other.
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

    /// <summary>What a call's timeout adds when it waited for a slot all that time.</summary>
    private string WaitedForSlotDetail => $" (it waited for one of the {_connection.PeerName}'s MaxConcurrentCallsPerConnection slots all that time)";

    /// <summary>Forgets a call given up on whose Request never went out: no answer will free its slot.</summary>
    private void ForgetAbandoned(uint callId)
    {
        lock (_abandoned)
        {
            ForgetAbandonedLocked(callId);
        }
    }

    /// <summary>Holding a slot, with the outbound queue over MaxOutboundBytesPerConnection (the peer
    /// is not reading): wait (asynchronously, cancellably, within the call's deadline) for room, then send.</summary>
    private async ValueTask<TResult> InvokeWhenThereIsRoomAsync<TArguments, TResult>(uint methodId, TArguments arguments, CallDeadline deadline, CancellationToken cancellationToken, CallStreams? streams, byte[]? metadata)
        where TArguments : struct
    {
        await EnterRoomGateAsync(methodId, deadline, cancellationToken).ConfigureAwait(false);
        PendingCall<TResult>? call;
        Exception? failure;
        try
        {
            call = StartCall<TArguments, TResult>(methodId, arguments, deadline, deadline.Now(Clock), cancellationToken, streams, metadata, holdingSlot: true, out failure);
        }
        finally
        {
            _roomGate.Release();
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

            ReleaseSlot(); // Nothing was sent.
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
