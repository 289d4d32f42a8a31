using System.Net;
using System.Net.Security;
using System.Net.Sockets;
using Microsoft.Extensions.Logging;

namespace Mux.Transport;

/// <summary>Opens the byte stream under a client's connection: a socket to the endpoint, with TLS
/// on top when <see cref="MuxClientOptions.Tls"/> is set; or TLS over a stream the user opened.</summary>
internal static class ClientTransport
{
    /// <summary>
    /// Connects to <paramref name="endPoint"/> (TCP or Unix domain socket) and, with TLS configured,
    /// authenticates the server, all within <see cref="MuxClientOptions.ConnectTimeout"/>.
    /// </summary>
    /// <exception cref="MuxConnectionException">The server refused, did not answer in time, or
    /// failed the TLS handshake.</exception>
    public static async Task<IMuxTransport> ConnectAsync(EndPoint endPoint, MuxClientOptions options, ILogger logger, CancellationToken cancellationToken)
    {
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
            SslStream ssl = await TlsHandshake.AuthenticateAsClientAsync(network, options.Tls, SocketEndPoints.TlsTargetHost(endPoint), endPoint.ToString() ?? "server", timeout.Token).ConfigureAwait(false);
            TransportLog.TlsEstablished(logger, endPoint.ToString() ?? "server", ssl.SslProtocol, ssl.NegotiatedCipherSuite);
            return new StreamConnection(ssl, socket, options.MaxFrameSize, options.TimeProvider);
        }
        catch (OperationCanceledException ex) when (!cancellationToken.IsCancellationRequested)
        {
            socket.Dispose();
            throw new MuxConnectionException($"Connecting to {endPoint} timed out after {DurationText.Format(options.ConnectTimeout)} (MuxClientOptions.ConnectTimeout).", new TimeoutException(ex.Message, ex));
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

    /// <summary>Wraps a stream the user connected, authenticating TLS over it first when configured.</summary>
    public static async Task<IMuxTransport> OverStreamAsync(Stream stream, MuxClientOptions options, ILogger logger, CancellationToken cancellationToken)
    {
        if (options.Tls is null)
        {
            return new StreamConnection(stream, socket: null, options.MaxFrameSize, options.TimeProvider);
        }

        using var expiry = new CancellationTokenSource(options.ConnectTimeout, options.TimeProvider); // Infinite: never.
        using var timeout = CancellationTokenSource.CreateLinkedTokenSource(cancellationToken, expiry.Token);
        try
        {
            SslStream ssl = await TlsHandshake.AuthenticateAsClientAsync(stream, options.Tls, defaultTargetHost: null, "the stream's server", timeout.Token).ConfigureAwait(false);
            TransportLog.TlsEstablished(logger, "stream", ssl.SslProtocol, ssl.NegotiatedCipherSuite);
            return new StreamConnection(ssl, (stream as NetworkStream)?.Socket, options.MaxFrameSize, options.TimeProvider);
        }
        catch (OperationCanceledException ex) when (!cancellationToken.IsCancellationRequested)
        {
            throw new MuxConnectionException($"The TLS handshake over the given stream timed out after {DurationText.Format(options.ConnectTimeout)} (MuxClientOptions.ConnectTimeout).", new TimeoutException(ex.Message, ex));
        }
    }

    private static void WarnIfTokenInPlaintext(EndPoint endPoint, MuxClientOptions options, ILogger logger)
    {
        if (options.AuthToken is not null && options.Tls is null && SocketEndPoints.CrossesNetwork(endPoint) && options.TryClaimPlaintextTokenWarning())
        {
            TransportLog.AuthTokenWithoutTls(logger, nameof(MuxClientOptions), endPoint.ToString() ?? "?");
        }
    }
}
