using MessagePack;
using Mux.Protocol;
using Mux.Serialization;

namespace Mux.Connection;

/// <summary>Mapped from the options once, at start: a change to the options after that changes no connection.</summary>

internal sealed class ConnectionSettings(MuxConnectionOptions options, bool isServer, TimeSpan callTimeout, int maxConcurrentCalls)
{
    public bool IsServer { get; } = isServer;

    public TimeProvider TimeProvider { get; } = options.TimeProvider;

    public TimeSpan KeepAliveInterval { get; } = options.KeepAliveInterval;

    public TimeSpan KeepAliveTimeout { get; } = options.KeepAliveTimeout;

    public int MaxFrameSize { get; } = options.MaxFrameSize;

    public int MaxMessageSize { get; } = options.MaxMessageSize;

    // What this side announces and enforces: no more than MaxMessageSize, which bounds a section anyway.
    public int MaxMetadataSize { get; } = Math.Min(options.MaxMetadataSize, options.MaxMessageSize);

    public int FragmentSize { get; } = options.FragmentSize;

    public int StreamWindow { get; } = options.StreamWindow;

    public int MaxOutboundBytes { get; } = options.MaxOutboundBytesPerConnection;

    // With generated formatters consulted first, reading what the peer sends as untrusted.
    public MessagePackSerializerOptions SerializerOptions { get; } = isServer
        ? MuxSerializerOptions.ForServer(options.SerializerOptions)
        : MuxSerializerOptions.ForClient(options.SerializerOptions);

    // Of this side's calls to its peer: CallTimeout, or a server's ClientCallTimeout.
    public TimeSpan CallTimeout { get; } = callTimeout;

    // The cap this side announces on the peer's calls (none on a client: its server's handlers bound them), and with it on
    // the peer's messages arriving in fragments at once.
    public int MaxConcurrentCalls { get; } = maxConcurrentCalls;

    // A server's only: whether its handlers' exception messages reach their callers, run with MuxCallContext.Current, run
    // inside interceptors (outermost first, as the server started), and whether its idle close needs the idle time.
    public bool SendsDetailedErrors { get; private init; }

    public bool PropagatesCallContext { get; private init; }

    public IMuxServerInterceptor[] Interceptors { get; private init; } = [];

    public bool TracksIdle { get; private init; }

    // A server's MaxConcurrentCalls, one object for all its connections; null when it has none (a client never has one).
    public ServerCallLimit? ServerCallLimit { get; private init; }

    public static ConnectionSettings ForClient(MuxClientOptions options) => new(options, isServer: false, options.CallTimeout, int.MaxValue);

    public static ConnectionSettings ForServer(MuxServerOptions options, IMuxServerInterceptor[] interceptors) =>
        new(options, isServer: true, options.ClientCallTimeout, options.MaxConcurrentCallsPerConnection)
        {
            SendsDetailedErrors = options.EnableDetailedErrors,
            PropagatesCallContext = options.EnableCallContextPropagation,
            Interceptors = interceptors,
            TracksIdle = options.IdleTimeout != Timeout.InfiniteTimeSpan,
            ServerCallLimit = options.MaxConcurrentCalls is { } limit ? new ServerCallLimit(limit, options.TimeProvider) : null,
        };

    /// <summary>The Hello or HelloAck this side sends: its limits, and a client's token.</summary>
    public HandshakeSettings Announce(string? authToken) => new(ProtocolConstants.Version, MaxFrameSize, MaxConcurrentCalls, authToken)
    {
        StreamWindow = StreamWindow,
        MaxMessageSize = MaxMessageSize,
        MaxMetadataSize = MaxMetadataSize,
    };
}
