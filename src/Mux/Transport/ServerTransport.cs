using System.Net;
using System.Net.Sockets;
using Microsoft.Extensions.Logging;

namespace Mux.Transport;

/// <summary>The server's side of the transports: the listening socket (TCP or Unix domain), and
/// the warning when an auth token would cross the network in plaintext.</summary>
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
}
