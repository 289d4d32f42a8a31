using System.Net;
using System.Net.WebSockets;
using Microsoft.AspNetCore.Http;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Logging;
using Mux.Transport;

namespace Mux.AspNetCore.Internal;

/// <summary>
/// The request delegate of a MapMux endpoint: accepts the WebSocket (subprotocol <c>mux</c>) and
/// hands it to the hosted <see cref="MuxServer"/> with the request's user, address and client
/// certificate, then holds the request until the Mux connection has closed.
/// </summary>
internal sealed class MuxWebSocketEndpoint(IServiceProvider services, ILogger logger)
{
    /// <summary>The log category of MapMux's endpoints.</summary>
    public const string LogCategory = "Mux.AspNetCore";

    public async Task HandleAsync(HttpContext context)
    {
        if (!context.WebSockets.IsWebSocketRequest)
        {
            MuxAspNetCoreLog.NotWebSocketRequest(logger, context.Request.Path);
            await RefuseAsync(context, StatusCodes.Status400BadRequest, "This endpoint serves Mux over WebSocket, and the request is not a WebSocket upgrade. Connect a Mux client to it at ws:// (or wss://) and this path: MuxClient.ConnectAsync(new Uri(\"ws://host:port/path\")) in .NET, MuxClient.connect(\"ws://host:port/path\") with the TypeScript client.").ConfigureAwait(false);
            return;
        }

        IList<string> offered = context.WebSockets.WebSocketRequestedProtocols;
        bool offersMux = offered.Contains(WebSocketConnection.SubProtocol);
        if (offered.Count > 0 && !offersMux)
        {
            string list = string.Join(", ", offered);
            MuxAspNetCoreLog.WrongSubProtocol(logger, context.Request.Path, list);
            await RefuseAsync(context, StatusCodes.Status400BadRequest, $"This endpoint serves Mux over WebSocket with the subprotocol \"{WebSocketConnection.SubProtocol}\"; the request offered only {list}.").ConfigureAwait(false);
            return;
        }

        MuxServer? server = TryGetServer();
        if (server is not { IsRunning: true })
        {
            MuxAspNetCoreLog.ServerNotRunning(logger, context.Request.Path);
            await RefuseAsync(context, StatusCodes.Status503ServiceUnavailable, "The Mux server is not running: the application is starting or stopping. Connect again in a moment.").ConfigureAwait(false);
            return;
        }

        // Chosen only when offered: a browser fails a handshake whose answer names a subprotocol it
        // did not ask for (and one that asked and got none).
        WebSocket webSocket = await context.WebSockets.AcceptWebSocketAsync(new WebSocketAcceptContext
        {
            SubProtocol = offersMux ? WebSocketConnection.SubProtocol : null,
        }).ConfigureAwait(false);

        ConnectionInfo connection = context.Connection;
        EndPoint? remote = connection.RemoteIpAddress is { } address ? new IPEndPoint(address, connection.RemotePort) : null;
        try
        {
            await server.ServeWebSocketAsync(webSocket, remote, connection.ClientCertificate, context.User).ConfigureAwait(false);
        }
        catch (ObjectDisposedException)
        {
            // The server began to stop after the check above: the client reads the close as a server
            // going away and reconnects elsewhere or later.
            using (webSocket)
            {
                await webSocket.CloseOutputAsync(WebSocketCloseStatus.EndpointUnavailable, "The Mux server is stopping.", CancellationToken.None).ConfigureAwait(false);
            }
        }
    }

    /// <summary>Begins the Mux server's stop (GoAway, then the drain) as the application stops; the
    /// host's own stop of the server then waits for it, within the host's shutdown timeout.</summary>
    public void BeginStop()
    {
        if (TryGetServer() is { } server)
        {
            _ = StopAsync(server);
        }
    }

    private async Task StopAsync(MuxServer server)
    {
        try
        {
            await server.StopAsync(CancellationToken.None).ConfigureAwait(false);
        }
        catch (Exception ex)
        {
            MuxAspNetCoreLog.StopFailed(logger, ex);
        }
    }

    /// <summary>The hosted server once the host has started it; null before (AddMuxServer's
    /// registration throws until then).</summary>
    private MuxServer? TryGetServer()
    {
        try
        {
            return services.GetService<MuxServer>();
        }
        catch (InvalidOperationException)
        {
            return null;
        }
    }

    private static Task RefuseAsync(HttpContext context, int status, string message)
    {
        context.Response.StatusCode = status;
        context.Response.ContentType = "text/plain; charset=utf-8";
        return context.Response.WriteAsync(message);
    }
}
