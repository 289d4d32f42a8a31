using System.Buffers.Binary;
using Mux.Protocol;

namespace Mux.Connection;

// Streams (Mux.Streaming): the credit window each side announces in the handshake for
// IAsyncEnumerable arguments and results, and the StreamCredit frame that extends it. Their
// producers send StreamItem and StreamEnd frames themselves (StreamProducer, OutgoingStreamCall).
internal abstract partial class MuxConnection
{
    /// <summary>How many items of each stream this side buffers (its options' StreamWindow):
    /// announced in the handshake as the credit a peer's producer starts with. Set by a
    /// subclass's constructor.</summary>
    internal int StreamWindow { get; init; } = HandshakeSettings.DefaultStreamWindow;

    /// <summary>The credit our producers start each stream with: the peer's announced window.
    /// Written by the reader loop from the handshake, before any call.</summary>
    internal int PeerStreamWindow { get; private set; } = HandshakeSettings.DefaultStreamWindow;

    /// <summary>Grants the producer of a call's stream <paramref name="count"/> more items; best
    /// effort (a closed connection ends the stream anyway).</summary>
    internal void SendStreamCredit(uint callId, FrameFlags idSpace, int count)
    {
        Span<byte> payload = stackalloc byte[ProtocolConstants.StreamCreditPayloadSize];
        BinaryPrimitives.WriteUInt32LittleEndian(payload, (uint)count);
        TrySendRawFrame(FrameType.StreamCredit, callId, payload, idSpace); // Closed: the stream fails with the connection.
    }
}
