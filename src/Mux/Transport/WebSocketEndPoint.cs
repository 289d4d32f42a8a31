using System.Net;

namespace Mux.Transport;

/// <summary>
/// A Mux server reached over WebSocket (an ASP.NET Core endpoint mapped with MapMux). A <see cref="DnsEndPoint"/> of the
/// URI's host and port, so that telemetry tags and a balancer's list treat it as any other; equal only to the same URI.
/// </summary>
internal sealed class WebSocketEndPoint : DnsEndPoint
{
    public WebSocketEndPoint(Uri uri)
        : base(uri.IdnHost, uri.Port)
    {
        Uri = uri;
    }

    public Uri Uri { get; }

    public bool IsSecure => Uri.Scheme == Uri.UriSchemeWss;

    /// <summary>Checks that <paramref name="uri"/> is absolute, with scheme ws or wss.</summary>
    public static WebSocketEndPoint From(Uri uri)
    {
        ArgumentNullException.ThrowIfNull(uri);
        if (!uri.IsAbsoluteUri || (uri.Scheme != Uri.UriSchemeWs && uri.Scheme != Uri.UriSchemeWss))
        {
            throw new ArgumentException(
                $"'{uri}' is not a WebSocket URI: a Mux server mapped with MapMux is reached at ws://host:port/path, " +
                "or wss://host:port/path for TLS (for a TCP server, connect to its EndPoint instead).",
                nameof(uri));
        }

        return new WebSocketEndPoint(uri);
    }

    public override bool Equals(object? comparand) => comparand is WebSocketEndPoint other && Uri.Equals(other.Uri);

    public override int GetHashCode() => Uri.GetHashCode();

    public override string ToString() => Uri.ToString();
}
