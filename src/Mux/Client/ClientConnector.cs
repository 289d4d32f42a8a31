using System.Net;
using Microsoft.Extensions.Logging;
using Mux.Diagnostics;
using Mux.Transport;

namespace Mux.Client;

/// <summary>Opens one client connection to an endpoint: the transport (socket, TLS), then the Mux
/// handshake. Used for the first connection and for every reconnect.</summary>
internal static class ClientConnector
{
    /// <exception cref="MuxConnectionException">The server refused, did not answer within
    /// <see cref="MuxClientOptions.ConnectTimeout"/>, failed TLS, or is not a Mux server.</exception>
    public static async Task<ClientConnection> OpenAsync(EndPoint endPoint, MuxClientOptions options, ILogger logger, CancellationToken cancellationToken, ClientServices? services = null)
    {
        (IMuxTransport transport, EndPoint? remote) = await ClientTransport.ConnectAsync(endPoint, options, logger, cancellationToken).ConfigureAwait(false);
        ClientConnection connection = await ClientConnection.ConnectAsync(transport, options, logger, endPoint.ToString() ?? "server", cancellationToken, services).ConfigureAwait(false);
        connection.Peer = ServerPeer.From(endPoint);
        connection.RemoteEndPoint = remote;
        return connection;
    }
}
