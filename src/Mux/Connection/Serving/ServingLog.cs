using Microsoft.Extensions.Logging;

namespace Mux.Connection;

/// <summary>
/// What the serving role logs, on its connection's logger (category "Mux.Server" or "Mux.Client"):
/// calls that failed or named no method this side serves. Methods are named "IService.Method".
/// Event ids are fixed across versions and unique within Mux (see ServerLog and ClientLog).
/// </summary>
internal static partial class ServingLog
{
    [LoggerMessage(EventId = 6, EventName = "HandlerFailed", Level = LogLevel.Warning, Message = "A handler for {Method} on connection {Connection} threw.")]
    public static partial void HandlerFailed(ILogger logger, string method, string connection, Exception error);

    /// <param name="logger">The server's logger.</param>
    /// <param name="connection">The connection that called.</param>
    /// <param name="method">"IService.Method" when a contract with that id is loaded in this process
    /// (the service was not added to the server), else "method 0x…".</param>
    [LoggerMessage(EventId = 7, EventName = "UnknownMethod", Level = LogLevel.Warning, Message = "Connection {Connection} called {Method}, which this server does not serve.")]
    public static partial void UnknownMethod(ILogger logger, string connection, string method);

    // error: the AggregateException of the callbacks that threw.
    [LoggerMessage(EventId = 28, EventName = "CancellationCallbackFailed", Level = LogLevel.Warning, Message = "A callback that a handler registered on its CancellationToken threw when the call on connection {Connection} was cancelled; the cancellation went on.")]
    public static partial void CancellationCallbackFailed(ILogger logger, string connection, Exception error);

    [LoggerMessage(EventId = 29, EventName = "ServerCallFailed", Level = LogLevel.Error, Message = "{Method}, called by the Mux server at {Server}, failed on this client; the server gets a generic error.")]
    public static partial void ServerCallFailed(ILogger logger, string method, string server, Exception error);
}
