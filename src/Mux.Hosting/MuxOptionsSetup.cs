using System.Globalization;
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
internal sealed class MuxServerOptionsSetup(
    IConfiguration? configuration = null, ILoggerFactory? loggerFactory = null, IHostEnvironment? environment = null)
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

        bound.ApplyTo(options);
        options.MaxConcurrentCallsPerConnection = bound.MaxConcurrentCallsPerConnection ?? options.MaxConcurrentCallsPerConnection;
        options.HandshakeTimeout = bound.HandshakeTimeout ?? options.HandshakeTimeout;
        options.ListenBacklog = bound.ListenBacklog ?? options.ListenBacklog;
        options.AuthToken = MuxConfigurationValues.AuthToken(bound.AuthToken, MuxServerConfiguration.SectionName) ?? options.AuthToken;
        options.EnableDetailedErrors = bound.EnableDetailedErrors ?? options.EnableDetailedErrors;
        options.ShutdownTimeout = bound.ShutdownTimeout ?? options.ShutdownTimeout;
        options.IdleTimeout = bound.IdleTimeout ?? options.IdleTimeout;
        options.EnableCallContextPropagation = bound.EnableCallContextPropagation ?? options.EnableCallContextPropagation;
        options.ClientCallTimeout = bound.ClientCallTimeout ?? options.ClientCallTimeout;
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
            throw new InvalidOperationException(
                $"{Key} is present but {Key}:Certificate is not. Set {Key}:Certificate:Path (and Password) or {Key}:Certificate:Subject, or " +
                $"remove {Key}.");
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
internal sealed class MuxClientOptionsSetup(
    IConfiguration? configuration = null, ILoggerFactory? loggerFactory = null, IHostEnvironment? environment = null)
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

        bound.ApplyTo(options);
        options.CallTimeout = bound.CallTimeout ?? options.CallTimeout;
        options.ConnectTimeout = bound.ConnectTimeout ?? options.ConnectTimeout;
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
        options.Service = bound.Service ?? options.Service;
        options.ResolveInterval = bound.ResolveInterval ?? options.ResolveInterval;
        options.WaitForConnection = bound.WaitForConnection ?? options.WaitForConnection;
    }
}

/// <summary>Checks of values that both configuration sections have.</summary>
internal static class MuxConfigurationValues
{
    /// <summary>The core names the option it refuses (<c>MuxClientOptions.ResolveInterval is -5.00:00:00; ...</c>), not
    /// knowing where the value came from; a user who wrote it in appsettings.json looks for the key. When a key of
    /// <paramref name="section"/> holds the value refused, this wraps <paramref name="error"/> in an exception that names
    /// the key; else null, so that a value code set over the key's is not blamed on the key.</summary>
    public static InvalidOperationException? NameKey(
        InvalidOperationException error, IConfiguration? configuration, string section, string owner)
    {
        if (configuration is null)
        {
            return null;
        }

        foreach (IConfigurationSection key in configuration.GetSection(section).GetChildren())
        {
            if (key.Value is { } value && Refuses(error.Message, owner + "." + key.Key, value))
            {
                return new InvalidOperationException($"The configuration value {key.Path} is '{value}': {error.Message}", error);
            }
        }

        return null;
    }

    // Whether the core's message says "OPTION is VALUE;" (or "OPTION (VALUE) is ...") with VALUE what the binder reads
    // from the key: the same number or duration. The binder parses both with the invariant culture; the message formats
    // a number with the current one, a TimeSpan with neither.
    private static bool Refuses(string message, string option, string value)
    {
        int at = message.IndexOf(option, StringComparison.OrdinalIgnoreCase);
        if (at < 0)
        {
            return false;
        }

        ReadOnlySpan<char> rest = message.AsSpan(at + option.Length);
        int end;
        if (rest.StartsWith(" is ", StringComparison.Ordinal))
        {
            rest = rest[" is ".Length..];
            end = rest.IndexOf(';');
        }
        else if (rest.StartsWith(" (", StringComparison.Ordinal))
        {
            rest = rest[" (".Length..];
            end = rest.IndexOf(')');
        }
        else
        {
            return false;
        }

        if (end < 0)
        {
            return false;
        }

        ReadOnlySpan<char> refused = rest[..end];
        if (long.TryParse(refused, NumberStyles.Integer, CultureInfo.CurrentCulture, out long number))
        {
            return long.TryParse(value, NumberStyles.Integer, CultureInfo.InvariantCulture, out long configured) && configured == number;
        }

        return TimeSpan.TryParse(refused, CultureInfo.InvariantCulture, out TimeSpan duration)
            && TimeSpan.TryParse(value, CultureInfo.InvariantCulture, out TimeSpan configuredDuration)
            && configuredDuration == duration;
    }

    /// <summary>The AuthToken key's value; an empty one (a variable or template left blank) fails: taken as a token, it
    /// would make a server refuse every client that sends none.</summary>
    public static string? AuthToken(string? value, string section) => value is { Length: 0 }
        ? throw new InvalidOperationException(
            $"The configuration value {section}:AuthToken is ''; an empty token is not a token. Set the token, or remove the key for none.")
        : value;
}
