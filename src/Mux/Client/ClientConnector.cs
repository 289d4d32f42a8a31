using System.Net;
using Microsoft.Extensions.Logging;
using Mux.Connection;
using Mux.Diagnostics;
using Mux.Transport;

namespace Mux.Client;

/// <summary>Opens one client connection to an endpoint: the transport (socket, TLS), then the Mux
/// handshake. Used for the first connection and for every reconnect.</summary>
internal static class ClientConnector
{
    /// <exception cref="MuxConnectionException">The server refused, did not answer within
    /// <see cref="MuxClientOptions.ConnectTimeout"/>, failed TLS, or is not a Mux server.</exception>
    public static async Task<ClientConnection> OpenAsync(EndPoint endPoint, MuxClientOptions options, ILogger logger, ServiceMethods services, CancellationToken cancellationToken)
    {
        (IMuxTransport transport, EndPoint? remote) = await ClientTransport.ConnectAsync(endPoint, options, logger, cancellationToken).ConfigureAwait(false);
        ClientConnection connection = await ClientConnection.ConnectAsync(transport, options, services, logger, endPoint.ToString() ?? "server", cancellationToken).ConfigureAwait(false);
        connection.Outgoing.Peer = ServerPeer.From(endPoint);
        connection.RemoteEndPoint = remote;
        return connection;
    }
}
