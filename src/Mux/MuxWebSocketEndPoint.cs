using System.Net;

namespace Mux;

/// <summary>
/// A Mux server reached over WebSocket, an ASP.NET Core endpoint mapped with <c>MapMux</c> (Mux.AspNetCore), at
/// <c>ws://host:port/path</c> or <c>wss://</c>. Use it wherever a client takes an endpoint. It is a
/// <see cref="DnsEndPoint"/> of the URI's host and port, so spans and metrics name it by them; two are equal when their
/// URIs are.
/// </summary>

/// <example><code>
/// var options = new MuxClientOptions();
/// options.EndPoints.Add(new MuxWebSocketEndPoint(new Uri("wss://a.example/mux")));
/// options.EndPoints.Add(new MuxWebSocketEndPoint(new Uri("wss://b.example/mux")));
/// await using MuxClient client = await MuxClient.ConnectAsync(options);
/// </code></example>
public sealed class MuxWebSocketEndPoint : DnsEndPoint
{
    /// <summary>Names the Mux endpoint at <paramref name="uri"/>.</summary>
    /// <param name="uri">An absolute <c>ws://</c> or <c>wss://</c> URI.</param>
    /// <exception cref="ArgumentNullException"><paramref name="uri"/> is null.</exception>
    /// <exception cref="ArgumentException"><paramref name="uri"/> is relative, or its scheme is not ws or wss.</exception>
    public MuxWebSocketEndPoint(Uri uri)
        : base(Checked(uri).IdnHost, uri.Port)
    {
        Uri = uri;
    }

    /// <summary>The endpoint's URI, ws:// or wss://.</summary>
    public Uri Uri { get; }

    internal bool IsSecure => Uri.Scheme == Uri.UriSchemeWss;

    /// <inheritdoc/>
    public override bool Equals(object? comparand) => comparand is MuxWebSocketEndPoint other && Uri.Equals(other.Uri);

    /// <inheritdoc/>
    public override int GetHashCode() => Uri.GetHashCode();

    /// <summary>The URI.</summary>
    public override string ToString() => Uri.ToString();

    private static Uri Checked(Uri uri)
    {
        ArgumentNullException.ThrowIfNull(uri);
        if (!uri.IsAbsoluteUri || (uri.Scheme != Uri.UriSchemeWs && uri.Scheme != Uri.UriSchemeWss))
        {
            throw new ArgumentException(
                $"'{uri}' is not a WebSocket URI: a Mux server mapped with MapMux is reached at ws://host:port/path, " +
                "or wss://host:port/path for TLS (for a TCP server, connect to its EndPoint instead).",
                nameof(uri));
        }

        return uri;
    }
}
