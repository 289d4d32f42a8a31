using Microsoft.Extensions.Logging;

namespace Mux.Connection;

/// <summary>
/// What a connection logs, on either end (category "Mux.Client" or "Mux.Server", the logger of the
/// client or server that owns it). Event ids are fixed across versions and unique within Mux
/// (ServerLog has 3–9, MuxHostingLog 100–).
/// </summary>
internal static partial class ConnectionLog
{
    public static void ConnectionClosed(ILogger logger, string connection, MuxCloseReason reason, Exception? error)
    {
        LogLevel level = reason is MuxCloseReason.LocalShutdown or MuxCloseReason.RemoteClosed or MuxCloseReason.GoAway or MuxCloseReason.IdleTimeout
            ? LogLevel.Debug
            : LogLevel.Warning;
        ConnectionClosed(logger, level, connection, reason, error);
    }

    [LoggerMessage(EventId = 1, EventName = "ConnectionClosed", Message = "Connection {Connection} closed: {Reason}.")]
    private static partial void ConnectionClosed(ILogger logger, LogLevel level, string connection, MuxCloseReason reason, Exception? error);

    [LoggerMessage(EventId = 2, EventName = "TeardownFailed", Level = LogLevel.Debug, Message = "Connection {Connection} failed while tearing down.")]
    public static partial void TeardownFailed(ILogger logger, string connection, Exception error);

    // error: the AggregateException of the callbacks that threw.
    [LoggerMessage(
        EventId = 11,
        EventName = "StreamCancellationCallbackFailed",
        Level = LogLevel.Warning,
        Message = "A callback registered on the CancellationToken of the stream a call on connection {Connection} sends threw when that token was "
            + "cancelled; the call went on ending.")]
    public static partial void StreamCancellationCallbackFailed(ILogger logger, string connection, Exception error);
}
