using System.Buffers;
using System.Diagnostics.CodeAnalysis;
using Mux.Protocol;

namespace Mux.Connection;

// The peer's answers to these calls (Response, Error, or one over MaxMessageSize): each takes its
// call out of the table, frees its slot and completes it. Reader loop.
internal sealed partial class OutgoingCalls
{
    /// <summary>Whether an answer with this id is worth reading: a call waits for it, or a call that
    /// gave up does (its answer frees its slot). Reader loop, for a message in fragments.</summary>
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

    /// <summary>The peer answered a call: takes it out of the table, or null when its caller gave up
    /// on it, and frees its slot either way. An answer to an id we never sent (or already counted)
    /// frees nothing.</summary>
    private PendingCall? TakeAnswered(uint callId)
    {
        PendingCall? call = _pending.TryRemove(callId);
        if (call is not null && call.IsWaitingForSlot)
        {
            // Out of the table but still queued: the close, which this exception brings, fails it.
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
        throw new MuxProtocolException($"The {_connection.PeerName} answered call {callId}, which was never sent to it (it waits for one of the {_connection.PeerName}'s MaxConcurrentCallsPerConnection slots).");

    /// <summary>A Response or Error to one of these calls. Reader loop only.</summary>
    public void OnAnswer(in Frame frame)
    {
        CallOutcome outcome = frame.Type == FrameType.Response ? CallOutcome.Response : CallOutcome.Error;
        PendingCall? call = TakeAnswered(frame.CallId);
        if (call is not null)
        {
            if (outcome == CallOutcome.Error && call.Deadline.IsSet && IsDeadlineExceeded(frame.Payload))
            {
                // The peer saw this call's deadline pass (before our own expiry scan, which runs
                // every tenth of the timeout, did): the caller gets the same timeout either way.
                call.CompleteWithException(CreateExpiredException(call));
            }
            else
            {
                call.CompleteWithPayload(outcome, frame.Payload, _connection);
            }
        }

        NotifyIfDrainedAfterGoAway();
    }

    /// <summary>Whether an Error body (MessagePack <c>[code, message, type]</c>) carries
    /// <see cref="MuxStatusCode.DeadlineExceeded"/>: its first two bytes are 0x93 and the code's fixint.</summary>
    private static bool IsDeadlineExceeded(in ReadOnlySequence<byte> payload)
    {
        ReadOnlySpan<byte> start = payload.FirstSpan;
        return start.Length >= 2 && start[0] == 0x93 && start[1] == (byte)MuxStatusCode.DeadlineExceeded;
    }

    /// <summary>An answer over this side's MaxMessageSize, from a peer that ignored the limit this
    /// side announced: its call fails now (its remaining fragments are skipped); the connection
    /// stays up. Reader loop only.</summary>
    public void OnAnswerTooLarge(in Frame first)
    {
        PendingCall? call = TakeAnswered(first.CallId);
        if (call is not null)
        {
            string options = _connection.OptionsName;
            string side = _connection.IsServer ? "server" : "client";
            call.CompleteWithException(new MuxRemoteException(
                MuxStatusCode.MessageTooLarge,
                $"The {_connection.PeerName}'s {(first.Type == FrameType.Response ? "response" : "error")} to {MuxServiceRegistry.GetMethodDisplayName(call.MethodId)} is {first.MessageSize} bytes, over this {side}'s MaxMessageSize of {_connection.Settings.MaxMessageSize} bytes ({MuxConnection.DescribeSize(_connection.Settings.MaxMessageSize)}, {options}.MaxMessageSize); it was skipped. Raise {options}.MaxMessageSize, or ask the {_connection.PeerName} for less.",
                null));
        }

        NotifyIfDrainedAfterGoAway();
    }
}
