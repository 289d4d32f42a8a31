using Mux.Protocol;

namespace Mux.Streaming;

/// <summary>
/// The streams of one call on the client: what the server streams to us (<see cref="Receiver"/>)
/// and the credit for what we stream to it (<see cref="Sender"/>). The client connection finds it
/// by call id for each StreamItem and StreamCredit frame; registered before the Request is sent,
/// removed by the call's owner when the call has ended.
/// </summary>
internal sealed class CallStreams(StreamReceiver? receiver, StreamSendWindow? sender)
{
    /// <summary>The server's stream of results; null when the method returns none.</summary>
    public StreamReceiver? Receiver { get; } = receiver;

    /// <summary>Credit for the client's stream of arguments; null when the method takes none. It
    /// holds no credit until the Request is out (<see cref="OnMessageWritten"/>), so no item can
    /// overtake the Request, whichever way the call waited for a slot.</summary>
    public StreamSendWindow? Sender { get; } = sender;

    /// <summary>The call's id; set when the call is registered, before its Request is sent.</summary>
    public uint CallId { get; private set; }

    /// <summary>Why the client's stream stopped, when its producer failed; read by the call's
    /// owner to fail the call with it rather than with the cancellation that followed.</summary>
    public Exception? SendFailure { get; set; }

    /// <summary>Gives the streams the call's id and id space, when the call is registered (before
    /// its Request is sent), and the peer's stream window, which the Sender gets once the Request is out.</summary>
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

    /// <summary>The Request is out whole (a Request in fragments, a few writer turns after it was
    /// queued): the Sender may now send up to the peer's window. Until then none of its StreamItem
    /// or StreamEnd frames can go out between two fragments of the Request (a receiver would see
    /// items for a call that has not started). Called once by the connection: on the sender's thread
    /// right after a whole Request was queued, or on the writer's thread right after the last
    /// fragment of one was written; never for a Request the connection dropped on closing. So it
    /// must not block, run user code or throw.</summary>
    public void OnMessageWritten() => Sender?.Open();
}
