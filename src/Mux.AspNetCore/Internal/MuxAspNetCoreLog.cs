using Microsoft.Extensions.Logging;

namespace Mux.AspNetCore.Internal;

/// <summary>What MapMux's endpoints log (category "Mux.AspNetCore"), with fixed event ids 120–129.
/// The connections themselves log in "Mux.Server", as every other server connection does.</summary>
internal static partial class MuxAspNetCoreLog
{
    [LoggerMessage(EventId = 120, EventName = "NotWebSocketRequest", Level = LogLevel.Debug, Message = "A request to the Mux endpoint {Path} was not a WebSocket upgrade; answered 400.")]
    public static partial void NotWebSocketRequest(ILogger logger, string path);

    [LoggerMessage(EventId = 121, EventName = "WrongSubProtocol", Level = LogLevel.Debug, Message = "A WebSocket request to the Mux endpoint {Path} offered the subprotocols {Offered} but not \"mux\"; answered 400.")]
    public static partial void WrongSubProtocol(ILogger logger, string path, string offered);

    [LoggerMessage(EventId = 122, EventName = "ServerNotRunning", Level = LogLevel.Information, Message = "A WebSocket request to the Mux endpoint {Path} came while the Mux server was not running (starting or stopping); refused.")]
    public static partial void ServerNotRunning(ILogger logger, string path);

    [LoggerMessage(EventId = 123, EventName = "StopFailed", Level = LogLevel.Error, Message = "Stopping the Mux server as the application stops failed.")]
    public static partial void StopFailed(ILogger logger, Exception error);
}
