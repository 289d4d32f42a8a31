using System.Net;
using System.Net.Security;
using System.Net.Sockets;
using Microsoft.Extensions.Logging;

namespace Mux.Transport;

/// <summary>The server's side of the transports: the listening socket (TCP or Unix domain), and
/// the byte stream of each accepted connection, authenticated with TLS when
/// <see cref="MuxServerOptions.Tls"/> is set.</summary>
internal static class ServerTransport
{
    /// <summary>Binds and listens on <paramref name="endPoint"/>.</summary>
    /// <exception cref="SocketException">The endpoint cannot be bound (port in use, or a Unix domain
    /// socket file already exists).</exception>
    public static Socket Listen(EndPoint endPoint, int backlog)
    {
        Socket listener = SocketEndPoints.CreateSocket(endPoint);
        try
        {
            listener.Bind(endPoint);
            listener.Listen(backlog);
            return listener;
        }
        catch
        {
            listener.Dispose();
            throw;
        }
    }

    /// <summary>Closes the listening socket and removes the Unix domain socket file it created, so
    /// the next start can bind the same path.</summary>
    public static void StopListening(Socket listener, EndPoint? boundEndPoint)
    {
        listener.Dispose();
        if (SocketEndPoints.UnixSocketFile(boundEndPoint) is { } path)
        {
            try
            {
                File.Delete(path);
            }
            catch (Exception ex) when (ex is IOException or UnauthorizedAccessException)
            {
                // Left behind: the next bind reports the path as in use, which says what to do.
            }
        }
    }

    /// <summary>Logs, once per server, that an auth token would cross the network in plaintext.</summary>
    public static void WarnIfTokenInPlaintext(MuxServerOptions options, EndPoint endPoint, ILogger logger)
    {
        if (options.AuthToken is not null && options.Tls is null && SocketEndPoints.CrossesNetwork(endPoint))
        {
            TransportLog.AuthTokenWithoutTls(logger, nameof(MuxServerOptions), endPoint.ToString() ?? "?");
        }
    }

    /// <summary>
    /// Authenticates TLS over an accepted connection within <see cref="MuxServerOptions.HandshakeTimeout"/>,
    /// counted on <see cref="MuxServerOptions.TimeProvider"/> from <paramref name="acceptedAt"/> (a
    /// timestamp of that clock). Returns null (and logs why) when the client fails the handshake,
    /// does not ask for <c>mux/1</c>, times out, or the server stops meanwhile; the stream is closed then.
    /// </summary>
    public static async Task<StreamConnection?> AuthenticateAsync(Stream stream, MuxServerOptions options, ILogger logger, string name, long acceptedAt, CancellationToken stopping)
    {
        using var timeout = new CancellationTokenSource(options.HandshakeTimeLeft(acceptedAt, options.TimeProvider.GetTimestamp()), options.TimeProvider);
        using var linked = CancellationTokenSource.CreateLinkedTokenSource(stopping, timeout.Token);
        try
        {
            SslStream ssl = await TlsHandshake.AuthenticateAsServerAsync(stream, options.Tls!, linked.Token).ConfigureAwait(false);
            TransportLog.TlsEstablished(logger, name, ssl.SslProtocol, ssl.NegotiatedCipherSuite);
            return new StreamConnection(ssl, (stream as NetworkStream)?.Socket, options.MaxFrameSize, options.TimeProvider);
        }
        catch (Exception ex)
        {
            // Whatever a client does wrong in its handshake (bad certificate, wrong ALPN, plaintext,
            // silence) costs only its own connection; the accept loop goes on.
            if (!stopping.IsCancellationRequested)
            {
                TransportLog.TlsHandshakeFailed(logger, name, ex is OperationCanceledException
                    ? new TimeoutException($"The client did not complete the TLS handshake within {DurationText.Format(options.HandshakeTimeout)} (MuxServerOptions.HandshakeTimeout).")
                    : ex);
            }

            await stream.DisposeAsync().ConfigureAwait(false);
            return null;
        }
    }
}
