namespace Mux.Hosting;

/// <summary>The keys both sections have, one for each limit of <see cref="MuxConnectionOptions"/>
/// that configuration can set. Every key is optional; a missing key leaves the option as it is.</summary>
internal abstract class MuxConnectionConfiguration
{
    public int? MaxFrameSize { get; set; }

    public int? MaxMessageSize { get; set; }

    public int? FragmentSize { get; set; }

    /// <summary>The credit window of each stream (IAsyncEnumerable argument or result).</summary>
    public int? StreamWindow { get; set; }

    public int? MaxOutboundBytesPerConnection { get; set; }

    public TimeSpan? KeepAliveInterval { get; set; }

    public TimeSpan? KeepAliveTimeout { get; set; }

    public int? MaxMetadataSize { get; set; }

    /// <summary>Sets the options whose keys are present.</summary>
    public void ApplyTo(MuxConnectionOptions options)
    {
        options.MaxFrameSize = MaxFrameSize ?? options.MaxFrameSize;
        options.MaxMessageSize = MaxMessageSize ?? options.MaxMessageSize;
        options.FragmentSize = FragmentSize ?? options.FragmentSize;
        options.StreamWindow = StreamWindow ?? options.StreamWindow;
        options.MaxOutboundBytesPerConnection = MaxOutboundBytesPerConnection ?? options.MaxOutboundBytesPerConnection;
        options.KeepAliveInterval = KeepAliveInterval ?? options.KeepAliveInterval;
        options.KeepAliveTimeout = KeepAliveTimeout ?? options.KeepAliveTimeout;
        options.MaxMetadataSize = MaxMetadataSize ?? options.MaxMetadataSize;
    }
}

/// <summary>The keys of the "Mux:Server" configuration section. Every key is optional; a missing
/// key leaves the option at its default.</summary>
internal sealed class MuxServerConfiguration : MuxConnectionConfiguration
{
    public const string SectionName = "Mux:Server";

    /// <summary>"host:port" to listen on, parsed into <see cref="MuxServerOptions.EndPoint"/>.</summary>
    public string? Listen { get; set; }

    public int? MaxConcurrentCallsPerConnection { get; set; }

    public TimeSpan? HandshakeTimeout { get; set; }

    public int? ListenBacklog { get; set; }

    public string? AuthToken { get; set; }

    /// <summary>TLS: the certificate (Path and Password, or Subject and Store, as Kestrel binds them).</summary>
    public MuxServerTlsConfiguration? Tls { get; set; }

    public bool? EnableDetailedErrors { get; set; }

    public bool? EnableCallContextPropagation { get; set; }

    public TimeSpan? ClientCallTimeout { get; set; }

    public TimeSpan? ShutdownTimeout { get; set; }

    public TimeSpan? IdleTimeout { get; set; }
}

/// <summary>The keys of the "Mux:Client" configuration section. Every key is optional; a missing
/// key leaves the option at its default.</summary>
internal sealed class MuxClientConfiguration : MuxConnectionConfiguration
{
    public const string SectionName = "Mux:Client";

    /// <summary>"host:port" of the server, parsed into <see cref="MuxClientOptions.EndPoint"/>.</summary>
    public string? Connect { get; set; }

    public TimeSpan? CallTimeout { get; set; }

    public TimeSpan? ConnectTimeout { get; set; }

    public string? AuthToken { get; set; }

    /// <summary>TLS: the server's expected name and an optional client certificate.</summary>
    public MuxClientTlsConfiguration? Tls { get; set; }

    public bool? AutoReconnect { get; set; }

    public TimeSpan? ReconnectInitialDelay { get; set; }

    public TimeSpan? ReconnectMaxDelay { get; set; }

    /// <summary>"mux://NAME" or "muxs://NAME", into <see cref="MuxClientOptions.Service"/>.</summary>
    public string? Service { get; set; }

    public TimeSpan? ResolveInterval { get; set; }

    public bool? WaitForConnection { get; set; }
}
