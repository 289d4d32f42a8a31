using Microsoft.Extensions.Logging;

namespace Mux.Server;

/// <summary>
/// What a server logs (category "Mux.Server"): its lifecycle, its connections' handshakes, and calls
/// that failed. Methods are named "IService.Method". Event ids are fixed across versions and unique
/// within Mux (ConnectionLog has 1–2, MuxHostingLog 100–).
/// </summary>
internal static partial class ServerLog
{
    [LoggerMessage(EventId = 3, EventName = "ConnectionAccepted", Level = LogLevel.Debug, Message = "Connection {Connection} accepted.")]
    public static partial void ConnectionAccepted(ILogger logger, string connection);

    [LoggerMessage(EventId = 4, EventName = "ServerStarted", Level = LogLevel.Information, Message = "Mux server listening on {EndPoint}.")]
    public static partial void ServerStarted(ILogger logger, string endPoint);

    [LoggerMessage(EventId = 5, EventName = "ServerStopped", Level = LogLevel.Information, Message = "Mux server stopped; {Connections} connections were open.")]
    public static partial void ServerStopped(ILogger logger, int connections);

    [LoggerMessage(EventId = 6, EventName = "HandlerFailed", Level = LogLevel.Warning, Message = "A handler for {Method} on connection {Connection} threw.")]
    public static partial void HandlerFailed(ILogger logger, string method, string connection, Exception error);

    /// <param name="logger">The server's logger.</param>
    /// <param name="connection">The connection that called.</param>
    /// <param name="method">"IService.Method" when a contract with that id is loaded in this process
    /// (the service was not added to the server), else "method 0x…".</param>
    [LoggerMessage(EventId = 7, EventName = "UnknownMethod", Level = LogLevel.Warning, Message = "Connection {Connection} called {Method}, which this server does not serve.")]
    public static partial void UnknownMethod(ILogger logger, string connection, string method);

    [LoggerMessage(EventId = 8, EventName = "AcceptFailed", Level = LogLevel.Error, Message = "Accepting connections on {EndPoint} failed; the server no longer accepts new connections.")]
    public static partial void AcceptFailed(ILogger logger, string endPoint, Exception error);

    [LoggerMessage(EventId = 9, EventName = "HandshakeRefused", Level = LogLevel.Warning, Message = "Connection {Connection} was refused in the handshake: {Reason}")]
    public static partial void HandshakeRefused(ILogger logger, string connection, string reason);
}
