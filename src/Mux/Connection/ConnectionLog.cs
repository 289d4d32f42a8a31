using Microsoft.Extensions.Logging;

namespace Mux.Connection;

/// <summary>
/// Category "Mux.Client" or "Mux.Server". Event ids are fixed across versions and unique within Mux: 1–2, 6–7, 11–12 and
/// 28–29 here (ServerLog has 3–5, 8–10 and 40, ClientLog 20–27 and 30–39, MuxHostingLog 100–).
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

    [LoggerMessage(EventId = 6, EventName = "HandlerFailed", Level = LogLevel.Warning,
        Message = "A handler for {Method} on connection {Connection} threw.")]
    public static partial void HandlerFailed(ILogger logger, string method, string connection, Exception error);

    // method: "IService.Method" when a contract with that id is loaded in this process (the service was not added to the
    // server), else "method 0x…".
    [LoggerMessage(EventId = 7, EventName = "UnknownMethod", Level = LogLevel.Warning,
        Message = "Connection {Connection} called {Method}, which this server does not serve.")]
    public static partial void UnknownMethod(ILogger logger, string connection, string method);

    // error: the AggregateException of the callbacks that threw.
    [LoggerMessage(EventId = 11, EventName = "StreamCancellationCallbackFailed", Level = LogLevel.Warning,
        Message = "A callback registered on the CancellationToken of the stream a call on connection {Connection} sends threw when that token was "
            + "cancelled; the call went on ending.")]
    public static partial void StreamCancellationCallbackFailed(ILogger logger, string connection, Exception error);

    // At most one line a second for the whole server (ServerCallLimit), however many calls it refuses.
    [LoggerMessage(EventId = 12, EventName = "CallsOverloaded", Level = LogLevel.Warning,
        Message = "The server refused {Refused} calls since the last such line: it already ran {Limit} calls at once "
            + "(MuxServerOptions.MaxConcurrentCalls). Callers were told Overloaded (never ran, safe to retry).")]
    public static partial void CallsOverloaded(ILogger logger, long refused, int limit);

    // error: the AggregateException of the callbacks that threw.
    [LoggerMessage(EventId = 28, EventName = "CancellationCallbackFailed", Level = LogLevel.Warning,
        Message = "A callback that a handler registered on its CancellationToken threw when the call on connection {Connection} was cancelled; "
            + "the cancellation went on.")]
    public static partial void CancellationCallbackFailed(ILogger logger, string connection, Exception error);

    [LoggerMessage(EventId = 29, EventName = "ServerCallFailed", Level = LogLevel.Error,
        Message = "{Method}, called by the Mux server at {Server}, failed on this client; the server gets a generic error.")]
    public static partial void ServerCallFailed(ILogger logger, string method, string server, Exception error);
}
