using Microsoft.Extensions.Logging;

namespace Mux.Connection;

/// <summary>Every log message Mux writes, with fixed event ids (stable across versions).</summary>
internal static partial class MuxLog
{
    public static void ConnectionClosed(ILogger logger, string connection, MuxCloseReason reason, Exception? error)
    {
        LogLevel level = reason is MuxCloseReason.LocalShutdown or MuxCloseReason.RemoteClosed or MuxCloseReason.GoAway
            ? LogLevel.Debug
            : LogLevel.Warning;
        ConnectionClosed(logger, level, connection, reason, error);
    }

    [LoggerMessage(EventId = 1, Message = "Connection {Connection} closed: {Reason}.")]
    private static partial void ConnectionClosed(ILogger logger, LogLevel level, string connection, MuxCloseReason reason, Exception? error);

    [LoggerMessage(EventId = 2, Level = LogLevel.Debug, Message = "Connection {Connection} failed while tearing down.")]
    public static partial void TeardownFailed(ILogger logger, string connection, Exception error);

    [LoggerMessage(EventId = 3, Level = LogLevel.Debug, Message = "Connection {Connection} accepted.")]
    public static partial void ConnectionAccepted(ILogger logger, string connection);

    [LoggerMessage(EventId = 4, Level = LogLevel.Information, Message = "Mux server listening on {EndPoint}.")]
    public static partial void ServerStarted(ILogger logger, string endPoint);

    [LoggerMessage(EventId = 5, Level = LogLevel.Information, Message = "Mux server stopped; {Connections} connections were open.")]
    public static partial void ServerStopped(ILogger logger, int connections);

    [LoggerMessage(EventId = 6, Level = LogLevel.Warning, Message = "A handler for {Method} on connection {Connection} threw.")]
    public static partial void HandlerFailed(ILogger logger, string method, string connection, Exception error);

    [LoggerMessage(EventId = 7, Level = LogLevel.Warning, Message = "Connection {Connection} called unknown method 0x{MethodId:x8}.")]
    public static partial void UnknownMethod(ILogger logger, string connection, uint methodId);

    [LoggerMessage(EventId = 8, Level = LogLevel.Error, Message = "Accepting connections on {EndPoint} failed; the server no longer accepts new connections.")]
    public static partial void AcceptFailed(ILogger logger, string endPoint, Exception error);

    [LoggerMessage(EventId = 9, Level = LogLevel.Warning, Message = "Connection {Connection} was refused in the handshake: {Reason}")]
    public static partial void HandshakeRefused(ILogger logger, string connection, string reason);
}
