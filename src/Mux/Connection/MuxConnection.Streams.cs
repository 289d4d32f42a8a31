using System.Buffers.Binary;
using MessagePack;
using Mux.Protocol;
using Mux.Serialization;

namespace Mux.Connection;

// Streams (Mux.Streaming): the frames both ends send for IAsyncEnumerable arguments and results,
// and the credit window each side announces in the handshake.
internal abstract partial class MuxConnection
{
    /// <summary>How many items of each stream this side buffers (its options' StreamWindow):
    /// announced in the handshake as the credit a peer's producer starts with. Set by a
    /// subclass's constructor.</summary>
    internal int StreamWindow { get; init; } = HandshakeSettings.DefaultStreamWindow;

    /// <summary>The credit our producers start each stream with: the peer's announced window.
    /// Written by the reader loop from the handshake, before any call.</summary>
    internal int PeerStreamWindow { get; private set; } = HandshakeSettings.DefaultStreamWindow;

    /// <summary>Sends one item of a call's stream, or with <paramref name="defer"/> queues it to go
    /// out with the next frame sent or at <see cref="SendQueuedFrames"/>. The caller has
    /// taken one item of credit. Returns the frame's size.</summary>
    /// <exception cref="MuxConnectionException">The connection is closed.</exception>
    internal int SendStreamItem<T>(uint callId, FrameFlags idSpace, T item, MessagePackSerializerOptions options, bool defer)
    {
        var body = new ResultBody<T>(item, options);
        return SendFrame(FrameType.StreamItem, callId, 0, ref body, idSpace, defer: defer);
    }

    /// <summary>Grants the producer of a call's stream <paramref name="count"/> more items; best
    /// effort (a closed connection ends the stream anyway).</summary>
    internal void SendStreamCredit(uint callId, FrameFlags idSpace, int count)
    {
        Span<byte> payload = stackalloc byte[ProtocolConstants.StreamCreditPayloadSize];
        BinaryPrimitives.WriteUInt32LittleEndian(payload, (uint)count);
        TrySendRawFrame(FrameType.StreamCredit, callId, payload, idSpace); // Closed: the stream fails with the connection.
    }

    /// <summary>Tells the callee the caller's stream of a call has ended: completed
    /// (<paramref name="code"/> Ok), or failed with that code and message. Best effort.</summary>
    internal void SendStreamEnd(uint callId, FrameFlags idSpace, MuxStatusCode code, string? message)
    {
        // Either way, a closed connection sends nothing: the callee cancels the call anyway.
        if (code == MuxStatusCode.Ok)
        {
            TrySendRawFrame(FrameType.StreamEnd, callId, ReadOnlySpan<byte>.Empty, idSpace);
            return;
        }

        var body = new ErrorBody(code, message ?? string.Empty, null);
        TrySendFrame(FrameType.StreamEnd, callId, ref body, idSpace);
    }
}
