using System.Runtime.CompilerServices;
using Mux.Diagnostics;
using Mux.Protocol;
using Mux.Serialization;
using Mux.Streaming;

namespace Mux.Connection;

// Sending a call: its start (cancelled, metadata over the peer's limit, a slot taken at once or
// waited for), its entry in the pending table, its Request and its cancellation hooked up.
internal sealed partial class OutgoingCalls
{
    /// <summary>Starts a call that must end by <paramref name="deadline"/>, fixed when the user made
    /// it (<see cref="CallDeadline.Fix"/>); <paramref name="now"/> is the caller's latest reading of
    /// the clock (0 for a call without a deadline), so that a call sent at once reads it no more.
    /// <paramref name="streams"/> are the call's streams when its method takes or returns an
    /// IAsyncEnumerable (Mux.Streaming); such a call has no deadline: it lasts as long as its
    /// streams do, and its token ends it. <paramref name="metadata"/> is the call's metadata section
    /// (MetadataSection.Encode), or null for none.</summary>
    public ValueTask<TResult> InvokeAsync<TArguments, TResult>(uint methodId, in TArguments arguments, in CallDeadline deadline, long now, CancellationToken cancellationToken, CallStreams? streams = null, byte[]? metadata = null)
        where TArguments : struct
    {
        PendingCall<TResult>? call = Start(methodId, arguments, deadline, now, cancellationToken, streams, metadata, out ValueTask<TResult> otherwise);
        return call is not null ? new ValueTask<TResult>(call, call.Version) : otherwise;
    }

    /// <summary>Starts a call that returns no value; see
    /// <see cref="InvokeAsync{TArguments, TResult}(uint, in TArguments, in CallDeadline, long, CancellationToken, CallStreams?, byte[])"/>.
    /// The call sent at once is awaited through its own object, as one with a value is.</summary>
    public ValueTask InvokeAsync<TArguments>(uint methodId, in TArguments arguments, in CallDeadline deadline, long now, CancellationToken cancellationToken, byte[]? metadata = null)
        where TArguments : struct
    {
        PendingCall<VoidResult>? call = Start(methodId, arguments, deadline, now, cancellationToken, null, metadata, out ValueTask<VoidResult> otherwise);
        // Otherwise: a Task already when it failed before it was sent; one Task more when it waits
        // for room in the outbound queue (a rare path).
        return call is not null ? new ValueTask(call, call.Version) : new ValueTask(otherwise.AsTask());
    }

    /// <summary>Both InvokeAsync: the call, when it was sent at once or waits for a slot; else null,
    /// and <paramref name="otherwise"/> is how it ends (cancelled or refused before anything was
    /// sent, or its wait for room in the outbound queue).</summary>
    private PendingCall<TResult>? Start<TArguments, TResult>(uint methodId, in TArguments arguments, in CallDeadline deadline, long now, CancellationToken cancellationToken, CallStreams? streams, byte[]? metadata, out ValueTask<TResult> otherwise)
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

        // Without a slot, the call waits for one as itself (see CallSlots), awaited as a sent one is.
        PendingCall<TResult>? call = StartCall<TArguments, TResult>(methodId, arguments, deadline, now, cancellationToken, streams, metadata, holdingSlot, out Exception? failure);
        otherwise = call is null ? ValueTask.FromException<TResult>(failure!) : default;
        return call;
    }

    /// <summary>
    /// The metadata section to send to the peer: <paramref name="metadata"/> itself; or null when the
    /// peer reads none (its handshake announced no maxMetadataSize: an earlier build, which would
    /// close the connection on the Metadata flag, and could not read the section anyway), or, with
    /// <paramref name="refused"/> set, when it is over the limit the peer announced (nothing is sent:
    /// the peer would refuse it).
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
            refused = new InvalidOperationException($"The metadata of the call to {MuxServiceRegistry.GetMethodDisplayName(methodId)} is {size} bytes, over the {_connection.PeerName}'s MaxMetadataSize of {limit} bytes ({peerOptions}.MaxMetadataSize, announced in its handshake); the call was not sent. Send less metadata, or raise {peerOptions}.MaxMetadataSize.");
            return null;
        }

        return metadata;
    }

    /// <summary>Rents the call, starts its telemetry (a client's calls), and starts it: sent, when
    /// <paramref name="holdingSlot"/>, else queued for a slot. Null (with why) when it failed before
    /// anything was sent, its slot then given back.</summary>
    private PendingCall<TResult>? StartCall<TArguments, TResult>(uint methodId, in TArguments arguments, in CallDeadline deadline, long now, CancellationToken cancellationToken, CallStreams? streams, byte[]? metadata, bool holdingSlot, out Exception? failure)
        where TArguments : struct
    {
        PendingCall<TResult> call = PendingCall<TResult>.Rent(this, methodId, deadline);
        call.Streams = streams;

        // Only a client's calls are spans of their own: a server's call to its client runs inside
        // the handler's server span.
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

    /// <summary>
    /// Publishes the call, sends its request (its deadline header measured at <paramref name="now"/>)
    /// or, without <paramref name="holdingSlot"/>, queues it for a slot, and hooks up cancellation.
    /// Returns an exception when the call failed before anything was sent or queued (the call object
    /// is then back in its pool).
    /// </summary>
    private Exception? StartCall<TResult, TArguments>(PendingCall<TResult> call, uint methodId, in TArguments arguments, long now, CancellationToken cancellationToken, byte[]? metadata, bool holdingSlot)
        where TArguments : struct
    {
        if (call.Deadline.At <= now)
        {
            // Its deadline passed while it waited (for a connection, a slot, room, or a resend):
            // the peer would only refuse it, so it is not sent, and no retry would help either.
            Exception expired = CreateTimeoutException(methodId, call.Deadline, " (its time ran out while it waited to be sent; it was not sent)");
            call.Return();
            return expired;
        }

        // A call that did not start the scan (another did, maybe at the same moment) may need it
        // sooner or more often than whoever started it.
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

            // The id is still in use after coming round (2^32 calls): take the next one.
        }

        // After GoAway no call is sent. Checked after the add, not before it: TryAdd's swap and
        // OnGoAway's barrier are full fences, so either OnGoAway's scan sees this call or this sees
        // _goingAway. Seen here, the call is taken back unsent; if the scan took it first, the scan
        // is failing it.
        if (_goingAway)
        {
            if (!_pending.TryRemove(call.CallId, call))
            {
                return null;
            }

            call.Return();

            // The last answer the peer owed may have been read while this call sat in the table,
            // so the drain was not noticed then: notice it now, or the connection would stay open
            // until the peer closed it.
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
            // A call that streams its arguments gets its send window only once its Request is out
            // whole, which for a Request in fragments is a few writer turns from now.
            SendRequest(call, methodId, arguments, now, streams?.Sender is null ? null : streams, metadata);
        }
        catch (Exception ex)
        {
            if (_pending.TryRemove(call.CallId, call))
            {
                call.Return();

                // SendFrame throws MuxConnectionException only before it queues anything.
                return ex is MuxConnectionException { IsSafeToRetry: false } closed ? NotSent(closed) : ex;
            }

            // A close or the expiry scan removed the call first and is already failing it: let that
            // outcome stand. But the scan left it among the abandoned calls, whose slots wait for
            // an answer, and none will come to a Request that never went out: its slot is free now.
            bool abandoned;
            lock (_abandoned)
            {
                abandoned = ForgetAbandonedLocked(call.CallId);
            }

            if (abandoned)
            {
                ReleaseSlot();
            }

            return null;
        }

        if (!call.NoteRequestQueued())
        {
            // The expiry scan failed the call while its Request was written, and left its Cancel to
            // this thread: it goes now, after the Request, so that the peer knows the call it cancels.
            SendCancel(call.CallId);
            return null;
        }

        if (cancellationToken.CanBeCanceled)
        {
            call.RegisterCancellation(cancellationToken);
        }

        return null;
    }
}
