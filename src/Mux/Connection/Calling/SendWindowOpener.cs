using Mux.Streaming;

namespace Mux.Connection;

/// <summary>
/// Opens a call's send window once its Request is out whole: until then the call's producer holds
/// no credit, so none of its StreamItem or StreamEnd frames can go out between two fragments of
/// the Request (a receiver would see items for a call that has not started). Made only for calls
/// that stream their arguments; immutable.
/// </summary>
internal sealed class SendWindowOpener(CallStreams streams, int serverWindow) : IMessageWrittenListener
{
    public void OnMessageWritten() => streams.OpenSendWindow(serverWindow);
}
