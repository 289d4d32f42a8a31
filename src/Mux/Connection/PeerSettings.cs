using Mux.Protocol;

namespace Mux.Connection;

/// <summary>
/// The peer's limits from its handshake, and what this side's calls may carry to it. Written once, by
/// MuxConnection.CompleteHandshake, before the handshake is published; until then <see cref="BeforeHandshake"/>: the
/// protocol's minimum frame (which any handshake fits), and no metadata (a peer that announces none reads none).
/// </summary>
internal readonly record struct PeerSettings(
    int MaxFrameSize, int MaxMessageSize, int MaxMetadataSize, int StreamWindow, int MaxConcurrentCalls, bool EndsFragmentsOnCancel,
    bool ReadsTraceContext, bool TakesStreams)
{
    public static PeerSettings BeforeHandshake { get; } = new(
        ProtocolConstants.MinimumMaxFrameSize, int.MaxValue, 0, HandshakeSettings.DefaultStreamWindow, int.MaxValue, false, false, true);

    /// <summary>What <paramref name="peer"/> announced; <paramref name="readsTraceContext"/> and
    /// <paramref name="takesStreams"/> say whether this side's calls carry trace context and streams to it.</summary>
    public static PeerSettings From(in HandshakeSettings peer, bool readsTraceContext, bool takesStreams) => new(
        peer.MaxFrameSize, peer.MaxMessageSize, peer.MaxMetadataSize, peer.StreamWindow, peer.MaxConcurrentCalls, peer.CancelEndsFragments,
        readsTraceContext, takesStreams);
}
