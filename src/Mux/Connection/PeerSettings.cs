using Mux.Protocol;

namespace Mux.Connection;

/// <summary>
/// Written once, before the handshake is published; until then <see cref="BeforeHandshake"/>: the protocol's minimum frame
/// (which any handshake fits), and no metadata.
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
