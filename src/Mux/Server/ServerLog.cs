using Microsoft.Extensions.Logging;

namespace Mux.Server;

/// <summary>
/// What a server logs (category "Mux.Server"): its lifecycle, its connections' handshakes, and calls
/// that failed. Methods are named "IService.Method". Event ids are fixed across versions and unique
/// within Mux (ConnectionLog has 1–2, 6–7, 11–12 and 28–29, MuxHostingLog 100–; 40 is Authenticate's).
/// </summary>
internal static partial class ServerLog
{
    [LoggerMessage(EventId = 3, EventName = "ConnectionAccepted", Level = LogLevel.Debug, Message = "Connection {Connection} accepted.")]
    public static partial void ConnectionAccepted(ILogger logger, string connection);

    [LoggerMessage(EventId = 4, EventName = "ServerStarted", Level = LogLevel.Information, Message = "Mux server listening on {EndPoint}.")]
    public static partial void ServerStarted(ILogger logger, string endPoint);

    [LoggerMessage(EventId = 5, EventName = "ServerStopped", Level = LogLevel.Information,
        Message = "Mux server stopped; {Connections} connections were open.")]
    public static partial void ServerStopped(ILogger logger, int connections);

    [LoggerMessage(EventId = 8, EventName = "AcceptFailed", Level = LogLevel.Error,
        Message = "Accepting connections on {EndPoint} failed; the server no longer accepts new connections.")]
    public static partial void AcceptFailed(ILogger logger, string endPoint, Exception error);

    [LoggerMessage(EventId = 9, EventName = "HandshakeRefused", Level = LogLevel.Warning,
        Message = "Connection {Connection} was refused in the handshake: {Reason}")]
    public static partial void HandshakeRefused(ILogger logger, string connection, string reason);

    [LoggerMessage(EventId = 10, EventName = "AcceptRetrying", Level = LogLevel.Warning,
        Message = "Accepting a connection on {EndPoint} failed; the server tries again in {DelayMilliseconds} ms.")]
    public static partial void AcceptRetrying(ILogger logger, string endPoint, double delayMilliseconds, Exception error);

    [LoggerMessage(EventId = 40, EventName = "AuthenticateFailed", Level = LogLevel.Warning,
        Message = "MuxServerOptions.Authenticate threw for connection {Connection}; the connection is refused as Unauthenticated.")]
    public static partial void AuthenticateFailed(ILogger logger, string connection, Exception error);
}
