using System.Collections.Concurrent;
using Mux.Protocol;
using Mux.Streaming;

namespace Mux.Client;

// Streams (Mux.Streaming): routing the server's StreamItem and StreamCredit frames to the call
// they belong to.
internal sealed partial class ClientConnection
{
    // The streams of calls in flight, by call id. Added by StartCall before the call's Request is
    // sent; removed by the call's owner (ClientStreamCall) once the call has ended; read by the
    // reader loop. Only streaming calls are here: a plain call never touches it.
    private readonly ConcurrentDictionary<uint, CallStreams> _streams = new();

    private void RegisterStreams(uint callId, CallStreams streams)
    {
        streams.SetCallId(callId);
        _streams[callId] = streams;
    }

    /// <summary>Forgets a call's streams once the call has ended: later frames for it are dropped.</summary>
    public void UnregisterStreams(CallStreams streams)
    {
        if (streams.CallId != 0)
        {
            _streams.TryRemove(new KeyValuePair<uint, CallStreams>(streams.CallId, streams));
        }
    }

    private void OnStreamItem(in Frame frame)
    {
        if (!_streams.TryGetValue(frame.CallId, out CallStreams? streams))
        {
            return; // The call has ended here (cancelled, say): what was still on its way is dropped.
        }

        if (streams.Receiver is null)
        {
            throw new MuxProtocolException($"The server sent a stream item for call {frame.CallId}, whose method returns no stream.");
        }

        streams.Receiver.OnItem(frame.Payload);
    }

    private void OnStreamCredit(uint callId, uint count)
    {
        if (_streams.TryGetValue(callId, out CallStreams? streams))
        {
            streams.Sender?.Grant(count);
        }
    }
}
