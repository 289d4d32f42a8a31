namespace Mux.Hosting;

/// <summary>The keys of the "Mux:Server" configuration section. Every key is optional; a missing
/// key leaves the option at its default.</summary>
internal sealed class MuxServerConfiguration
{
    /// <summary>The section's path.</summary>
    public const string SectionName = "Mux:Server";

    /// <summary>"host:port" to listen on, parsed into <see cref="MuxServerOptions.EndPoint"/>.</summary>
    public string? Listen { get; set; }

    public int? MaxFrameSize { get; set; }

    public int? MaxConcurrentCallsPerConnection { get; set; }

    public TimeSpan? HandshakeTimeout { get; set; }

    public int? ListenBacklog { get; set; }

    public string? AuthToken { get; set; }

    /// <summary>TLS: the certificate (Path and Password, or Subject and Store, as Kestrel binds them).</summary>
    public MuxServerTlsConfiguration? Tls { get; set; }

    public bool? EnableDetailedErrors { get; set; }

    // Issue 10: the credit window of each stream (IAsyncEnumerable argument or result).
    public int? StreamWindow { get; set; }

    // Issue 10: deadlines passed on by handlers, and calls from the server to its clients.
    public bool? EnableCallContextPropagation { get; set; }

    public TimeSpan? ClientCallTimeout { get; set; }

    // Issue 8: limits on what one connection may cost, and dead-peer detection.
    public int? MaxOutboundBytesPerConnection { get; set; }

    // Issue 10: messages larger than one frame.
    public int? MaxMessageSize { get; set; }

    public int? FragmentSize { get; set; }

    public TimeSpan? ShutdownTimeout { get; set; }

    public TimeSpan? KeepAliveInterval { get; set; }

    public TimeSpan? KeepAliveTimeout { get; set; }

    public TimeSpan? IdleTimeout { get; set; }

    // Issue 25: the call pipeline.
    public int? MaxMetadataSize { get; set; }
}

/// <summary>The keys of the "Mux:Client" configuration section. Every key is optional; a missing
/// key leaves the option at its default.</summary>
internal sealed class MuxClientConfiguration
{
    /// <summary>The section's path.</summary>
    public const string SectionName = "Mux:Client";

    /// <summary>"host:port" of the server, parsed into <see cref="MuxClientOptions.EndPoint"/>.</summary>
    public string? Connect { get; set; }

    public TimeSpan? CallTimeout { get; set; }

    public TimeSpan? ConnectTimeout { get; set; }

    public int? MaxFrameSize { get; set; }

    public string? AuthToken { get; set; }

    /// <summary>TLS: the server's expected name and an optional client certificate.</summary>
    public MuxClientTlsConfiguration? Tls { get; set; }

    public bool? AutoReconnect { get; set; }

    public TimeSpan? ReconnectInitialDelay { get; set; }

    public TimeSpan? ReconnectMaxDelay { get; set; }

    // Issue 10: the credit window of each stream (IAsyncEnumerable argument or result).
    public int? StreamWindow { get; set; }

    // Issue 8: a bound on requests queued for a server that does not read, and dead-peer detection.
    public int? MaxOutboundBytesPerConnection { get; set; }

    // Issue 10: messages larger than one frame.
    public int? MaxMessageSize { get; set; }

    public int? FragmentSize { get; set; }

    public TimeSpan? KeepAliveInterval { get; set; }

    public TimeSpan? KeepAliveTimeout { get; set; }

    // Issue 12: several instances found by name through service discovery.

    /// <summary>"mux://NAME" or "muxs://NAME", into <see cref="MuxClientOptions.Service"/>.</summary>
    public string? Service { get; set; }

    public TimeSpan? ResolveInterval { get; set; }

    // Issue 25: the call pipeline.
    public int? MaxMetadataSize { get; set; }

    public bool? WaitForConnection { get; set; }
}
