using Mux.Protocol;

namespace Mux.Streaming;

/// <summary>The streams of one outgoing call: the callee's stream to the caller, and the credit for the caller's stream. Found by call id for each
/// StreamItem and StreamCredit frame; registered before the Request is sent, removed by the call's owner when the call has ended.</summary>
internal sealed class CallStreams(StreamReceiver? receiver, StreamSendWindow? sender)
{
    /// <summary>Null when the method returns no stream.</summary>
    public StreamReceiver? Receiver { get; } = receiver;

    /// <summary>Null when the method takes no stream. It holds no credit until the Request is out (<see cref="OnMessageWritten"/>),
    /// so no item can overtake the Request, whichever way the call waited for a slot.</summary>
    public StreamSendWindow? Sender { get; } = sender;

    public uint CallId { get; private set; }

    /// <summary>Why the caller's producer failed: the call fails with it, not with the cancellation that followed.</summary>
    public Exception? SendFailure { get; set; }

    /// <summary>When the call is registered, before its Request is sent; the Sender gets the peer's window once it is out.</summary>
    public void SetCallId(uint callId, FrameFlags idSpace, int peerWindow)
    {
        CallId = callId;
        if (Sender is not null)
        {
            Sender.CallId = callId;
            Sender.IdSpace = idSpace;
            Sender.Grant((uint)peerWindow); // Held, as the peer's StreamCredit, until the window opens.
        }

        if (Receiver is not null)
        {
            Receiver.CallId = callId;
            Receiver.IdSpace = idSpace;
        }
    }

    /// <summary>The Request is out whole, so no stream frame can go out between two of its fragments. Called once, on the
    /// sender's thread or the writer's: it must not block, run user code or throw.</summary>

    public void OnMessageWritten() => Sender?.Open();
}
