using System.Net.Security;
using Microsoft.Extensions.Configuration;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Options;

namespace Mux.Hosting;

/// <summary>
/// The first configure step of <see cref="MuxServerOptions"/>: sets the logger factory from
/// dependency injection and applies the "Mux:Server" configuration section. Registered once, before
/// the delegate given to AddMuxServer, so that values set in code win over configuration.
/// </summary>
internal sealed class MuxServerOptionsSetup(IConfiguration? configuration = null, ILoggerFactory? loggerFactory = null, IHostEnvironment? environment = null)
    : IConfigureOptions<MuxServerOptions>
{
    public void Configure(MuxServerOptions options)
    {
        options.LoggerFactory ??= loggerFactory;
        if (configuration is null)
        {
            return;
        }

        var bound = new MuxServerConfiguration();
        configuration.GetSection(MuxServerConfiguration.SectionName).Bind(bound);
        if (bound.Listen is not null)
        {
            options.EndPoint = EndPointParser.ParseListen(bound.Listen, MuxServerConfiguration.SectionName + ":Listen");
        }

        options.MaxFrameSize = bound.MaxFrameSize ?? options.MaxFrameSize;
        options.MaxConcurrentCallsPerConnection = bound.MaxConcurrentCallsPerConnection ?? options.MaxConcurrentCallsPerConnection;
        options.HandshakeTimeout = bound.HandshakeTimeout ?? options.HandshakeTimeout;
        options.ListenBacklog = bound.ListenBacklog ?? options.ListenBacklog;
        options.AuthToken = MuxConfigurationValues.AuthToken(bound.AuthToken, MuxServerConfiguration.SectionName) ?? options.AuthToken;
        options.EnableDetailedErrors = bound.EnableDetailedErrors ?? options.EnableDetailedErrors;
        options.MaxOutboundBytesPerConnection = bound.MaxOutboundBytesPerConnection ?? options.MaxOutboundBytesPerConnection;
        options.MaxMessageSize = bound.MaxMessageSize ?? options.MaxMessageSize;
        options.FragmentSize = bound.FragmentSize ?? options.FragmentSize;
        options.ShutdownTimeout = bound.ShutdownTimeout ?? options.ShutdownTimeout;
        options.KeepAliveInterval = bound.KeepAliveInterval ?? options.KeepAliveInterval;
        options.KeepAliveTimeout = bound.KeepAliveTimeout ?? options.KeepAliveTimeout;
        options.IdleTimeout = bound.IdleTimeout ?? options.IdleTimeout;
        options.StreamWindow = bound.StreamWindow ?? options.StreamWindow;
        options.EnableCallContextPropagation = bound.EnableCallContextPropagation ?? options.EnableCallContextPropagation;
        options.ClientCallTimeout = bound.ClientCallTimeout ?? options.ClientCallTimeout;
        options.MaxMetadataSize = bound.MaxMetadataSize ?? options.MaxMetadataSize;
        if (bound.Tls is { } tls)
        {
            ConfigureTls(options, tls);
        }
    }

    private void ConfigureTls(MuxServerOptions options, MuxServerTlsConfiguration tls)
    {
        const string Key = MuxServerConfiguration.SectionName + ":Tls";
        if (tls.Certificate is null)
        {
            throw new InvalidOperationException($"{Key} is present but {Key}:Certificate is not. Set {Key}:Certificate:Path (and Password) or {Key}:Certificate:Subject, or remove {Key}.");
        }

        options.Tls ??= new SslServerAuthenticationOptions();
        options.Tls.ServerCertificate = CertificateLoader.Load(tls.Certificate, Key + ":Certificate", environment?.ContentRootPath);
        options.Tls.ClientCertificateRequired = tls.ClientCertificateRequired ?? options.Tls.ClientCertificateRequired;
    }
}

/// <summary>
/// The first configure step of <see cref="MuxClientOptions"/>: sets the logger factory from
/// dependency injection and applies the "Mux:Client" configuration section. Registered once, before
/// the delegate given to AddMuxClient, so that values set in code win over configuration.
/// </summary>
internal sealed class MuxClientOptionsSetup(IConfiguration? configuration = null, ILoggerFactory? loggerFactory = null, IHostEnvironment? environment = null)
    : IConfigureOptions<MuxClientOptions>
{
    public void Configure(MuxClientOptions options)
    {
        options.LoggerFactory ??= loggerFactory;
        if (configuration is null)
        {
            return;
        }

        var bound = new MuxClientConfiguration();
        configuration.GetSection(MuxClientConfiguration.SectionName).Bind(bound);
        if (bound.Connect is not null)
        {
            options.EndPoint = EndPointParser.ParseConnect(bound.Connect, MuxClientConfiguration.SectionName + ":Connect");
        }

        options.CallTimeout = bound.CallTimeout ?? options.CallTimeout;
        options.ConnectTimeout = bound.ConnectTimeout ?? options.ConnectTimeout;
        options.MaxFrameSize = bound.MaxFrameSize ?? options.MaxFrameSize;
        options.AuthToken = MuxConfigurationValues.AuthToken(bound.AuthToken, MuxClientConfiguration.SectionName) ?? options.AuthToken;
        if (bound.Tls is { } tls && tls.Enabled != false)
        {
            const string Key = MuxClientConfiguration.SectionName + ":Tls";
            options.Tls ??= new SslClientAuthenticationOptions();
            options.Tls.TargetHost = tls.TargetHost ?? options.Tls.TargetHost;
            if (tls.Certificate is not null)
            {
                options.Tls.ClientCertificates = [CertificateLoader.Load(tls.Certificate, Key + ":Certificate", environment?.ContentRootPath)];
            }
        }
        options.AutoReconnect = bound.AutoReconnect ?? options.AutoReconnect;
        options.ReconnectInitialDelay = bound.ReconnectInitialDelay ?? options.ReconnectInitialDelay;
        options.ReconnectMaxDelay = bound.ReconnectMaxDelay ?? options.ReconnectMaxDelay;
        options.MaxOutboundBytesPerConnection = bound.MaxOutboundBytesPerConnection ?? options.MaxOutboundBytesPerConnection;
        options.MaxMessageSize = bound.MaxMessageSize ?? options.MaxMessageSize;
        options.FragmentSize = bound.FragmentSize ?? options.FragmentSize;
        options.KeepAliveInterval = bound.KeepAliveInterval ?? options.KeepAliveInterval;
        options.KeepAliveTimeout = bound.KeepAliveTimeout ?? options.KeepAliveTimeout;
        options.StreamWindow = bound.StreamWindow ?? options.StreamWindow;
        options.Service = bound.Service ?? options.Service;
        options.ResolveInterval = bound.ResolveInterval ?? options.ResolveInterval;
        options.MaxMetadataSize = bound.MaxMetadataSize ?? options.MaxMetadataSize;
        options.WaitForConnection = bound.WaitForConnection ?? options.WaitForConnection;
    }
}

/// <summary>Checks of values that both configuration sections have.</summary>
internal static class MuxConfigurationValues
{
    /// <summary>The AuthToken key's value; an empty one (a variable or template left blank) fails:
    /// taken as a token, it made a server refuse every client that sends none, at its handshake.</summary>
    /// <param name="value">The bound value; null when the key is missing.</param>
    /// <param name="section">The section's path, for the error message.</param>
    public static string? AuthToken(string? value, string section) => value is { Length: 0 }
        ? throw new InvalidOperationException($"The configuration value {section}:AuthToken is ''; an empty token is not a token. Set the token, or remove the key for none.")
        : value;
}
