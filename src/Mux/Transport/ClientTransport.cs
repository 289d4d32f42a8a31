using System.Net;
using System.Net.Security;
using System.Net.Sockets;
using System.Net.WebSockets;
using System.Security.Authentication;
using Microsoft.Extensions.Logging;

namespace Mux.Transport;

/// <summary>A socket (with TLS when configured), a WebSocket for a ws:// or wss:// URI, or TLS over the user's stream.</summary>
internal static class ClientTransport
{
    /// <summary>Connects and authenticates TLS within <see cref="MuxClientOptions.ConnectTimeout"/>.</summary>
    /// <exception cref="MuxConnectionException">The server refused, did not answer in time, or failed the TLS handshake.</exception>
    public static async Task<IMuxTransport> ConnectAsync(
        EndPoint endPoint, MuxClientOptions options, ILogger logger, CancellationToken cancellationToken)
    {
        if (endPoint is MuxWebSocketEndPoint webSocket)
        {
            return await ConnectWebSocketAsync(webSocket, options, logger, cancellationToken).ConfigureAwait(false);
        }

        WarnIfTokenInPlaintext(endPoint, options, logger);
        Socket socket = SocketEndPoints.CreateSocket(endPoint);
        using var expiry = new CancellationTokenSource(options.ConnectTimeout, options.TimeProvider); // Infinite: never.
        using var timeout = CancellationTokenSource.CreateLinkedTokenSource(cancellationToken, expiry.Token);
        try
        {
            await socket.ConnectAsync(endPoint, timeout.Token).ConfigureAwait(false);
            if (options.Tls is null)
            {
                return new SocketConnection(socket, options.MaxFrameSize, options.TimeProvider);
            }

            var network = new NetworkStream(socket, ownsSocket: true);
            SslStream ssl = await TlsHandshake.AuthenticateAsClientAsync(
                network, options.Tls, SocketEndPoints.TlsTargetHost(endPoint), endPoint.ToString() ?? "server", timeout.Token).ConfigureAwait(false);
            TransportLog.TlsEstablished(logger, endPoint.ToString() ?? "server", ssl.SslProtocol, ssl.NegotiatedCipherSuite);
            return new StreamConnection(ssl, socket, options.MaxFrameSize, options.TimeProvider);
        }
        catch (OperationCanceledException ex) when (!cancellationToken.IsCancellationRequested)
        {
            socket.Dispose();
            throw new MuxConnectionException(
                $"Connecting to {endPoint} timed out after {DurationText.Format(options.ConnectTimeout)} (MuxClientOptions.ConnectTimeout).",
                new TimeoutException(ex.Message, ex));
        }
        catch (SocketException ex)
        {
            socket.Dispose();
            throw new MuxConnectionException($"Could not connect to the Mux server at {endPoint}: {ex.Message}", ex);
        }
        catch
        {
            socket.Dispose();
            throw;
        }
    }

    public static async Task<IMuxTransport> OverStreamAsync(
        Stream stream, MuxClientOptions options, ILogger logger, CancellationToken cancellationToken)
    {
        if (options.Tls is null)
        {
            return new StreamConnection(stream, socket: null, options.MaxFrameSize, options.TimeProvider);
        }

        using var expiry = new CancellationTokenSource(options.ConnectTimeout, options.TimeProvider); // Infinite: never.
        using var timeout = CancellationTokenSource.CreateLinkedTokenSource(cancellationToken, expiry.Token);
        try
        {
            SslStream ssl = await TlsHandshake.AuthenticateAsClientAsync(
                stream, options.Tls, defaultTargetHost: null, "the stream's server", timeout.Token).ConfigureAwait(false);
            TransportLog.TlsEstablished(logger, "stream", ssl.SslProtocol, ssl.NegotiatedCipherSuite);
            return new StreamConnection(ssl, (stream as NetworkStream)?.Socket, options.MaxFrameSize, options.TimeProvider);
        }
        catch (OperationCanceledException ex) when (!cancellationToken.IsCancellationRequested)
        {
            throw new MuxConnectionException(
                $"The TLS handshake over the given stream timed out after {DurationText.Format(options.ConnectTimeout)} " +
                "(MuxClientOptions.ConnectTimeout).",
                new TimeoutException(ex.Message, ex));
        }
    }

    /// <summary>Over wss://, TLS is the HTTP handler's: it takes <see cref="MuxClientOptions.Tls"/> but for its ALPN list
    /// (HTTP negotiates its own), and the URI's host is the name checked.</summary>
    private static async Task<IMuxTransport> ConnectWebSocketAsync(
        MuxWebSocketEndPoint endPoint, MuxClientOptions options, ILogger logger, CancellationToken cancellationToken)
    {
        Uri uri = endPoint.Uri;
        if (options.AuthToken is not null && !endPoint.IsSecure && !uri.IsLoopback && options.TryClaimPlaintextTokenWarning())
        {
            TransportLog.AuthTokenWithoutTls(logger, nameof(MuxClientOptions), uri.ToString());
        }

        var webSocket = new ClientWebSocket();
        webSocket.Options.AddSubProtocol(WebSocketConnection.SubProtocol);
        webSocket.Options.KeepAliveInterval = TimeSpan.Zero; // Mux pings a quiet connection itself.
        webSocket.Options.CollectHttpResponseDetails = true; // For the status of a refused upgrade.

        // The handler lives as long as the WebSocket it opened: the connection disposes it.
        HttpMessageInvoker? invoker = options.Tls is { } tls && endPoint.IsSecure
            ? new HttpMessageInvoker(new SocketsHttpHandler { SslOptions = CopyForHttp(tls) })
            : null;
        using var expiry = new CancellationTokenSource(options.ConnectTimeout, options.TimeProvider); // Infinite: never.
        using var timeout = CancellationTokenSource.CreateLinkedTokenSource(cancellationToken, expiry.Token);
        try
        {
            await webSocket.ConnectAsync(uri, invoker, timeout.Token).ConfigureAwait(false);
            if (webSocket.SubProtocol != WebSocketConnection.SubProtocol)
            {
                throw new MuxConnectionException(
                    $"The server at {uri} accepted the WebSocket but not its subprotocol \"{WebSocketConnection.SubProtocol}\": " +
                    "it is not a Mux endpoint (map one with MapMux) or not this protocol.",
                    MuxCloseReason.ProtocolError,
                    null);
            }

            return new WebSocketConnection(
                webSocket, remoteEndPoint: null, remoteCertificate: null, options.MaxFrameSize, options.TimeProvider, invoker);
        }
        catch (Exception ex)
        {
            webSocket.Abort();
            webSocket.Dispose();
            invoker?.Dispose();
            if (ex is OperationCanceledException && !cancellationToken.IsCancellationRequested)
            {
                throw new MuxConnectionException(
                    $"Connecting to {uri} timed out after {DurationText.Format(options.ConnectTimeout)} (MuxClientOptions.ConnectTimeout).",
                    new TimeoutException(ex.Message, ex));
            }

            if (ex is WebSocketException refused)
            {
                throw DescribeRefusal(uri, webSocket, refused);
            }

            throw;
        }
    }

    private static MuxConnectionException DescribeRefusal(Uri uri, ClientWebSocket webSocket, WebSocketException error)
    {
        if (webSocket.HttpStatusCode is HttpStatusCode status and not 0 and not HttpStatusCode.SwitchingProtocols)
        {
            string hint = status switch
            {
                HttpStatusCode.Unauthorized => " The endpoint requires an authenticated user (RequireAuthorization).",
                HttpStatusCode.Forbidden => " The endpoint's authorization refused this user.",
                HttpStatusCode.NotFound => " Nothing is mapped at that path: check the URI against the server's MapMux pattern.",
                _ => string.Empty,
            };
            return new MuxConnectionException(
                $"The server at {uri} answered the WebSocket upgrade with HTTP {(int)status} ({status}).{hint}", MuxCloseReason.ProtocolError, error);
        }

        for (Exception? inner = error.InnerException; inner is not null; inner = inner.InnerException)
        {
            if (inner is AuthenticationException tls)
            {
                return new MuxConnectionException(
                    $"The TLS handshake with the Mux server at {uri} failed: {tls.Message} Check that the server's certificate is " +
                    $"trusted on this machine and issued for '{uri.IdnHost}', or decide trust yourself with " +
                    "MuxClientOptions.Tls.RemoteCertificateValidationCallback.",
                    MuxCloseReason.ProtocolError,
                    error);
            }
        }

        string reason = error.InnerException?.Message is { Length: > 0 } detail ? detail : error.Message;
        return new MuxConnectionException($"Could not connect to the Mux server at {uri}: {reason}", error);
    }

    /// <summary>Without the ALPN list: HTTP offers its own.</summary>

    private static SslClientAuthenticationOptions CopyForHttp(SslClientAuthenticationOptions tls)
    {
        SslClientAuthenticationOptions copy = TlsHandshake.CopyForMux(tls, defaultTargetHost: null);
        copy.ApplicationProtocols = null;
        return copy;
    }

    private static void WarnIfTokenInPlaintext(EndPoint endPoint, MuxClientOptions options, ILogger logger)
    {
        if (options.AuthToken is not null && options.Tls is null && SocketEndPoints.CrossesNetwork(endPoint)
            && options.TryClaimPlaintextTokenWarning())
        {
            TransportLog.AuthTokenWithoutTls(logger, nameof(MuxClientOptions), endPoint.ToString() ?? "?");
        }
    }
}
