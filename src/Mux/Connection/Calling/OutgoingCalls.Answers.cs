using System.Buffers;
using System.Collections.Concurrent;
using System.Diagnostics.CodeAnalysis;
using Mux.Protocol;
using Mux.Streaming;

namespace Mux.Connection;

// The peer's answers, streams and GoAway, and the end of the connection: all on the reader loop but StopSending and FailAll.
internal sealed partial class OutgoingCalls
{
    // Whether the peer sent GoAway, not StopSending: written before _goingAway, so whoever sees that sees this.
    private volatile bool _peerWentAway;

    // Completed once no call sent before StopSending is left; a call in the table after that is taking itself back unsent.
    private TaskCompletionSource? _stoppedSending;

    // The streams of streaming calls, by id: added before the Request is sent, removed by the call's owner once it ended.
    private readonly ConcurrentDictionary<uint, CallStreams> _streams = new();

    /// <summary>For an answer in fragments: a call given up on expects one too, since it frees its slot.</summary>
    public bool ExpectsAnswer(uint callId)
    {
        if (_pending.Find(callId) is not null)
        {
            return true;
        }

        lock (_abandoned)
        {
            return _abandoned.Contains(callId);
        }
    }

    /// <summary>Null when the call was given up on. An answer to an id never sent, or already counted, frees no slot.</summary>
    private PendingCall? TakeAnswered(uint callId)
    {
        PendingCall? call = _pending.TryRemove(callId);
        if (call is not null && call.IsWaitingForSlot)
        {
            // Out of the table but still queued: the close this exception brings fails it.
            ThrowAnswerToUnsentCall(callId);
        }

        if (call is null)
        {
            lock (_abandoned)
            {
                if (!ForgetAbandonedLocked(callId))
                {
                    return null;
                }
            }
        }

        ReleaseSlot();
        return call;
    }

    [DoesNotReturn]
    private void ThrowAnswerToUnsentCall(uint callId) =>
        throw new MuxProtocolException(
            $"The {_connection.PeerName} answered call {callId}, which was never sent to it (it waits for one of the " +
            $"{_connection.PeerName}'s MaxConcurrentCallsPerConnection slots).");

    public void OnAnswer(in Frame frame)
    {
        CallOutcome outcome = frame.Type == FrameType.Response ? CallOutcome.Response : CallOutcome.Error;
        PendingCall? call = TakeAnswered(frame.CallId);
        if (call is not null)
        {
            if (outcome == CallOutcome.Error && call.Deadline.IsSet && IsDeadlineExceeded(frame.Payload))
            {
                // The peer saw the deadline pass before the expiry scan did: the caller gets the same timeout either way.
                call.CompleteWithException(CreateExpiredException(call));
            }
            else
            {
                call.CompleteWithPayload(outcome, frame.Payload, _connection);
            }
        }

        NotifyIfDrainedAfterGoAway();
    }

    /// <summary>Whether an Error body, MessagePack <c>[code, message, type]</c>, starts 0x93 and DeadlineExceeded's fixint.</summary>
    private static bool IsDeadlineExceeded(in ReadOnlySequence<byte> payload)
    {
        ReadOnlySpan<byte> start = payload.FirstSpan;
        return start.Length >= 2 && start[0] == 0x93 && start[1] == (byte)MuxStatusCode.DeadlineExceeded;
    }

    /// <summary>From a peer that ignored the limit: the call fails, its other fragments are skipped, the connection stays up.</summary>
    public void OnAnswerTooLarge(in Frame first)
    {
        PendingCall? call = TakeAnswered(first.CallId);
        if (call is not null)
        {
            string options = _connection.OptionsName;
            string side = _connection.IsServer ? "server" : "client";
            int limit = _connection.Settings.MaxMessageSize;
            string answer = first.Type == FrameType.Response ? "response" : "error";
            call.CompleteWithException(new MuxRemoteException(
                MuxStatusCode.MessageTooLarge,
                $"The {_connection.PeerName}'s {answer} to {MuxServiceRegistry.GetMethodDisplayName(call.MethodId)} is {first.MessageSize} " +
                $"bytes, over this {side}'s MaxMessageSize of {limit} bytes ({MuxConnection.DescribeSize(limit)}, {options}.MaxMessageSize); " +
                $"it was skipped. Raise {options}.MaxMessageSize, or ask the {_connection.PeerName} for less.",
                null));
        }

        NotifyIfDrainedAfterGoAway();
    }

    /// <summary>After GoAway the connection is told (a client then closes it); after <see cref="StopSending"/> its task completes.</summary>
    private void NotifyIfDrainedAfterGoAway()
    {
        if (!_goingAway || _pending.Count != 0)
        {
            return;
        }

        // The count never reads short of the calls in (CallTable.Count), and a call added after StopSending sees _goingAway.
        if (_stoppedSending is { Task.IsCompleted: false } stopped)
        {
            stopped.TrySetResult();
        }

        if (_peerWentAway)
        {
            _connection.OnCallsDrainedAfterGoAway();
        }
    }

    /// <summary>As after a GoAway (a balanced client dropped the instance): calls not yet in the table fail as not sent,
    /// safe to send elsewhere; the task completes once the calls sent are done.</summary>
    public Task StopSending()
    {
        TaskCompletionSource stopped = new(TaskCreationOptions.RunContinuationsAsynchronously);
        if (Interlocked.CompareExchange(ref _stoppedSending, stopped, null) is { } earlier)
        {
            return earlier.Task;
        }

        _goingAway = true;
        Interlocked.MemoryBarrier(); // Pairs with StartCall's check after its table add, as OnGoAway's does.
        FailWaitingCalls(GoingAwayNotSent);
        NotifyIfDrainedAfterGoAway();
        return stopped.Task;
    }

    public void OnGoAway(uint lastServedCallId)
    {
        _peerWentAway = true;
        _goingAway = true;
        Interlocked.MemoryBarrier(); // Pairs with StartCall's check after its table add: see there.
        FailWaitingCalls(GoingAwayNotSent);
        List<PendingCall>? notServed = null;
        _pending.RemoveWhere(lastServedCallId, static (call, last) => call.CallId > last, ref notServed);
        foreach (PendingCall call in notServed ?? [])
        {
            call.CompleteWithException(MuxConnectionException.NotRun(
                $"The Mux {_connection.PeerName} at {_connection.Name} is shutting down and did not run this call; it is safe to retry.",
                MuxCloseReason.GoAway,
                null));
        }

        NotifyIfDrainedAfterGoAway();
    }

    private MuxConnectionException NotSent(MuxConnectionException error) =>
        LeftUnsentByClose?.Invoke() ?? MuxConnectionException.NotRun($"The call was not sent: {error.Message}", error.Reason, error.InnerException);

    private MuxConnectionException GoingAwayNotSent() =>
        _peerWentAway
            ? MuxConnectionException.NotRun(
                $"The Mux {_connection.PeerName} at {_connection.Name} is shutting down (it sent GoAway); the call was not sent.",
                MuxCloseReason.GoAway,
                null)
            : MuxConnectionException.NotRun(
                $"This {_connection.SideName} no longer sends calls to the Mux {_connection.PeerName} at {_connection.Name} " +
                "(it was removed from the instances calls go to); the call was not sent.",
                MuxCloseReason.LocalShutdown,
                null);

    /// <summary>The connection closed: every call fails with <paramref name="error"/>, except those never sent (waiting
    /// for a slot, or in the table after the drain of <see cref="StopSending"/>), which are safe to send elsewhere.</summary>
    public void FailAll(MuxConnectionException error)
    {
        Volatile.Read(ref _expiryTimer)?.Dispose();
        FailWaitingCalls(() => NotSent(error));
        var calls = new List<PendingCall>();
        _pending.Close(calls);
        MuxConnectionException failure = calls.Count != 0 && _stoppedSending is { Task.IsCompleted: true } ? NotSent(error) : error;
        foreach (PendingCall call in calls)
        {
            call.CompleteWithException(failure);
        }
    }

    /// <summary>0 once every streaming call has ended.</summary>
    public int StreamCount => _streams.Count;

    private void RegisterStreams(uint callId, CallStreams streams)
    {
        streams.SetCallId(callId, _idSpace, _connection.Peer.StreamWindow);
        _streams[callId] = streams;
    }

    public void UnregisterStreams(CallStreams streams)
    {
        if (streams.CallId != 0)
        {
            _streams.TryRemove(new KeyValuePair<uint, CallStreams>(streams.CallId, streams));
        }
    }

    public void OnStreamItem(in Frame frame)
    {
        if (!_streams.TryGetValue(frame.CallId, out CallStreams? streams))
        {
            return; // The call has ended here (cancelled, say): what was still on its way is dropped.
        }

        if (streams.Receiver is null)
        {
            throw new MuxProtocolException($"The {_connection.PeerName} sent a stream item for call {frame.CallId}, whose method returns no stream.");
        }

        streams.Receiver.OnItem(frame.Payload);
    }

    public void OnStreamCredit(uint callId, uint count)
    {
        if (_streams.TryGetValue(callId, out CallStreams? streams))
        {
            streams.Sender?.Grant(count);
        }
    }
}
