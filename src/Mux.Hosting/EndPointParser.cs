using System.Globalization;
using System.Net;
using System.Net.Sockets;

namespace Mux.Hosting;

/// <summary>Parses the "host:port" strings of the "Mux:Server:Listen" and "Mux:Client:Connect"
/// configuration keys into endpoints.</summary>
internal static class EndPointParser
{
    /// <summary>Parses an address to listen on: an IP address or <c>localhost</c> (the IPv4
    /// loopback address), and a port (0 picks a free one).</summary>
    /// <param name="value">For example <c>127.0.0.1:5000</c>, <c>[::1]:5000</c>, <c>0.0.0.0:5000</c> or <c>localhost:5000</c>.</param>
    /// <param name="key">The configuration key, for the error message.</param>
    /// <returns>The endpoint to bind.</returns>
    /// <exception cref="InvalidOperationException">The value is not an IP address (or localhost) and a port.</exception>
    public static EndPoint ParseListen(string value, string key)
    {
        if (!TrySplit(value, out string host, out int port, out bool bracketed))
        {
            throw Invalid(
                value, key, "an IP address or localhost, a colon and a port, for example 127.0.0.1:5000, [::1]:5000, 0.0.0.0:5000 or localhost:5000");
        }

        if (IPAddress.TryParse(host, out IPAddress? address) && (!bracketed || address.AddressFamily == AddressFamily.InterNetworkV6))
        {
            return new IPEndPoint(address, port);
        }

        if (!bracketed && string.Equals(host, "localhost", StringComparison.OrdinalIgnoreCase))
        {
            return new IPEndPoint(IPAddress.Loopback, port);
        }

        throw Invalid(
            value,
            key,
            "an IP address or localhost to listen on (a server binds an address, not a host name), " +
            "for example 127.0.0.1:5000, [::1]:5000, 0.0.0.0:5000 or localhost:5000");
    }

    /// <summary>Parses a server address to connect to: an IP address or a host name, and a port; or the
    /// ws:// or wss:// URI of a server on ASP.NET Core.</summary>
    /// <param name="value">For example <c>127.0.0.1:5000</c>, <c>[::1]:5000</c>, <c>users.internal:5000</c> or <c>wss://users.internal/mux</c>.</param>
    /// <param name="key">The configuration key, for the error message.</param>
    /// <returns>An <see cref="IPEndPoint"/> for an IP address, a <see cref="MuxWebSocketEndPoint"/> for a URI, otherwise a <see cref="DnsEndPoint"/>.</returns>
    /// <exception cref="InvalidOperationException">The value is not a host and a port from 1 to 65535, nor a ws:// or wss:// URI.</exception>
    public static EndPoint ParseConnect(string value, string key)
    {
        const string Expected =
            "a host name or IP address, a colon and a port from 1 to 65535, for example 127.0.0.1:5000, [::1]:5000 or localhost:5000, " +
            "or the ws:// or wss:// URI of a server mapped with MapMux, for example ws://localhost:5000/mux";
        if (value.Contains("://", StringComparison.Ordinal))
        {
            return Uri.TryCreate(value.Trim(), UriKind.Absolute, out Uri? uri) && (uri.Scheme == Uri.UriSchemeWs || uri.Scheme == Uri.UriSchemeWss)
                ? new MuxWebSocketEndPoint(uri)
                : throw Invalid(value, key, Expected);
        }

        if (!TrySplit(value, out string host, out int port, out bool bracketed) || port == 0)
        {
            throw Invalid(value, key, Expected);
        }

        if (IPAddress.TryParse(host, out IPAddress? address) && (!bracketed || address.AddressFamily == AddressFamily.InterNetworkV6))
        {
            return new IPEndPoint(address, port);
        }

        if (!bracketed && Uri.CheckHostName(host) == UriHostNameType.Dns && !EndsInNumber(host))
        {
            return new DnsEndPoint(host, port);
        }

        throw Invalid(value, key, Expected);
    }

    // A name whose last label is all digits (10.0.0.256) is a mistyped address, not a host name (a top-level domain is
    // never all-numeric, RFC 3696): DNS would only fail to find it, later.
    private static bool EndsInNumber(string host)
    {
        ReadOnlySpan<char> last = host.AsSpan(host.LastIndexOf('.') + 1);
        return !last.IsEmpty && !last.ContainsAnyExceptInRange('0', '9');
    }

    // Splits "host:port" or "[ipv6]:port". An IPv6 address must be in brackets, since its own colons would make the
    // port ambiguous.
    private static bool TrySplit(string value, out string host, out int port, out bool bracketed)
    {
        host = string.Empty;
        port = 0;
        bracketed = false;
        string text = value.Trim();
        int colon = text.LastIndexOf(':');
        if (colon <= 0 || colon == text.Length - 1)
        {
            return false;
        }

        host = text[..colon];
        if (host.StartsWith('[') && host.EndsWith(']'))
        {
            host = host[1..^1];
            bracketed = true;
        }
        else if (host.Contains(':', StringComparison.Ordinal) || host.Contains('[', StringComparison.Ordinal)
            || host.Contains(']', StringComparison.Ordinal))
        {
            return false;
        }

        return host.Length > 0
            && int.TryParse(text.AsSpan(colon + 1), NumberStyles.None, CultureInfo.InvariantCulture, out port)
            && port <= IPEndPoint.MaxPort;
    }

    private static InvalidOperationException Invalid(string value, string key, string expected) =>
        new($"The configuration value {key} is '{value}'; it must be {expected}.");
}
