using Microsoft.Extensions.Logging;

namespace Mux.Hosting;

/// <summary>Every log message Mux.Hosting writes, in the "Mux.Hosting" category, with fixed event ids from 100 and event
/// names, stable across versions (the core library uses ids below 100).</summary>
internal static partial class MuxHostingLog
{
    public const string Category = "Mux.Hosting";

    [LoggerMessage(EventId = 100, EventName = "ServerStarted", Level = LogLevel.Information,
        Message = "Mux server started on {EndPoint}, serving {ServiceCount} service(s).")]
    public static partial void ServerStarted(ILogger logger, string endPoint, int serviceCount);

    [LoggerMessage(EventId = 101, EventName = "ServerStopping", Level = LogLevel.Information,
        Message = "Mux server on {EndPoint} is stopping: draining the calls in flight on {Connections} connection(s) " +
            "until the host's shutdown timeout.")]
    public static partial void ServerStopping(ILogger logger, string endPoint, int connections);

    [LoggerMessage(EventId = 102, EventName = "ServerStopped", Level = LogLevel.Information, Message = "Mux server on {EndPoint} stopped.")]
    public static partial void ServerStopped(ILogger logger, string endPoint);

    // Ids 103 and 105 stay unused: the core library's ClientLog (category "Mux.Client") logs a client's connections.

    [LoggerMessage(EventId = 104, EventName = "ClientDisconnected", Level = LogLevel.Information,
        Message = "Mux client disconnected from {EndPoint}.")]
    public static partial void ClientDisconnected(ILogger logger, string endPoint);

    [LoggerMessage(EventId = 106, EventName = "ScopeDisposeFailed", Level = LogLevel.Warning,
        Message = "Disposing the service scope of a call to {Method} failed.")]
    public static partial void ScopeDisposeFailed(ILogger logger, string method, Exception error);

    [LoggerMessage(EventId = 107, EventName = "ServerListenFailed", Level = LogLevel.Error,
        Message = "Mux server could not listen on {EndPoint} (Mux:Server:Listen or MuxServerOptions.EndPoint).")]
    public static partial void ServerListenFailed(ILogger logger, string endPoint, Exception error);

    [LoggerMessage(EventId = 108, EventName = "InstancesWithoutPortSkipped", Level = LogLevel.Warning,
        Message = "Service discovery found the instance(s) {Instances} of {Service} without a port; the client skips them. {Hint}")]
    public static partial void InstancesWithoutPortSkipped(ILogger logger, string instances, string service, string hint);
}
