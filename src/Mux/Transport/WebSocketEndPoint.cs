using System.Net;

namespace Mux.Transport;

/// <summary>
/// A Mux server reached over WebSocket (<c>ws://</c> or <c>wss://</c>, an ASP.NET Core endpoint
/// mapped with MapMux). A <see cref="DnsEndPoint"/> of the URI's host and port, so that what reads
/// a client's endpoint for its host and port (the spans' and metrics' server tags, a balancer's
/// list) treats it as any other; equal only to the same URI.
/// </summary>
internal sealed class WebSocketEndPoint : DnsEndPoint
{
    public WebSocketEndPoint(Uri uri)
        : base(uri.IdnHost, uri.Port)
    {
        Uri = uri;
    }

    /// <summary>The endpoint's URI, scheme ws or wss.</summary>
    public Uri Uri { get; }

    /// <summary>Whether the connection runs over TLS (<c>wss://</c>).</summary>
    public bool IsSecure => Uri.Scheme == Uri.UriSchemeWss;

    /// <summary>Checks that <paramref name="uri"/> can name a Mux WebSocket endpoint.</summary>
    /// <exception cref="ArgumentNullException"><paramref name="uri"/> is null.</exception>
    /// <exception cref="ArgumentException">It is relative, or its scheme is not ws or wss.</exception>
    public static WebSocketEndPoint From(Uri uri)
    {
        ArgumentNullException.ThrowIfNull(uri);
        if (!uri.IsAbsoluteUri || (uri.Scheme != Uri.UriSchemeWs && uri.Scheme != Uri.UriSchemeWss))
        {
            throw new ArgumentException($"'{uri}' is not a WebSocket URI: a Mux server mapped with MapMux is reached at ws://host:port/path, or wss://host:port/path for TLS (for a TCP server, connect to its EndPoint instead).", nameof(uri));
        }

        return new WebSocketEndPoint(uri);
    }

    public override bool Equals(object? comparand) => comparand is WebSocketEndPoint other && Uri.Equals(other.Uri);

    public override int GetHashCode() => Uri.GetHashCode();

    public override string ToString() => Uri.ToString();
}
