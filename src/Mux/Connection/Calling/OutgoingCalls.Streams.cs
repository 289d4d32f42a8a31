using System.Collections.Concurrent;
using Mux.Protocol;
using Mux.Streaming;

namespace Mux.Connection;

// Streams (Mux.Streaming) of the calls this side makes: routing the peer's StreamItem and
// StreamCredit frames to the call they belong to.
internal sealed partial class OutgoingCalls
{
    // The streams of calls in flight, by call id. Added by StartCall before the call's Request is
    // sent; removed by the call's owner (StreamCall) once the call has ended; read by the reader
    // loop. Only streaming calls are here: a plain call never touches it.
    private readonly ConcurrentDictionary<uint, CallStreams> _streams = new();

    /// <summary>Calls whose streams are registered now: none once every streaming call has ended.</summary>
    public int StreamCount => _streams.Count;

    private void RegisterStreams(uint callId, CallStreams streams)
    {
        streams.SetCallId(callId, _idSpace, _connection.Peer.StreamWindow);
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

    /// <summary>An item of the stream the peer returns for one of these calls. Reader loop only.</summary>
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

    /// <summary>The peer granted credit for the stream one of these calls sends. Reader loop only.</summary>
    public void OnStreamCredit(uint callId, uint count)
    {
        if (_streams.TryGetValue(callId, out CallStreams? streams))
        {
            streams.Sender?.Grant(count);
        }
    }
}
