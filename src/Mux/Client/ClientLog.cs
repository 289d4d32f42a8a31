using Microsoft.Extensions.Logging;

namespace Mux.Client;

/// <summary>
/// What a <see cref="MuxClient"/> logs about its connections (category "Mux.Client"): each state transition once, failed attempts once per
/// outage (the rest at Debug), and changes to the set of instances (30–39). Event ids are fixed across versions and unique within Mux
/// (ConnectionLog has 1–2, 6–7, 11–12 and 28–29, ServerLog 3–10 and 40, ClientLog 20–27 and 30–39, MuxHostingLog 100–).
/// </summary>
internal static partial class ClientLog
{
    [LoggerMessage(EventId = 20, EventName = "Connected", Level = LogLevel.Information, Message = "Connected to the Mux server at {Server}.")]
    public static partial void Connected(ILogger logger, string server);

    [LoggerMessage(EventId = 21, EventName = "ConnectionLost", Level = LogLevel.Warning,
        Message = "The connection to the Mux server at {Server} was lost ({Reason}); reconnecting. " +
            "Calls that were in flight on it failed; new calls wait for the new connection.")]
    public static partial void ConnectionLost(ILogger logger, string server, MuxCloseReason reason, Exception? error);

    [LoggerMessage(EventId = 22, EventName = "ServerGoingAway", Level = LogLevel.Information,
        Message = "The Mux server at {Server} sent GoAway; new calls go to a new connection while the old one finishes its calls.")]
    public static partial void ServerGoingAway(ILogger logger, string server);

    [LoggerMessage(EventId = 23, EventName = "ConnectFailed", Level = LogLevel.Warning,
        Message = "Could not connect to the Mux server at {Server}; retrying in the background (next attempt in {Delay}).")]
    public static partial void ConnectFailed(ILogger logger, string server, string delay, Exception error);

    [LoggerMessage(EventId = 24, EventName = "ConnectRetryFailed", Level = LogLevel.Debug,
        Message = "Connecting to the Mux server at {Server} failed again (attempt {Attempt}); next attempt in {Delay}.")]
    public static partial void ConnectRetryFailed(ILogger logger, string server, int attempt, string delay, Exception error);

    [LoggerMessage(EventId = 25, EventName = "Reconnected", Level = LogLevel.Information,
        Message = "Reconnected to the Mux server at {Server} after {Attempts} attempt(s), {Downtime} after the connection was lost.")]
    public static partial void Reconnected(ILogger logger, string server, int attempts, string downtime);

    [LoggerMessage(EventId = 26, EventName = "ClientClosed", Level = LogLevel.Information, Message = "The Mux client for {Server} is closed: {Why}")]
    public static partial void ClientClosed(ILogger logger, string server, string why);

    [LoggerMessage(EventId = 27, EventName = "StateChangedHandlerFailed", Level = LogLevel.Error,
        Message = "A MuxClient.StateChanged handler threw; the client goes on.")]
    public static partial void StateChangedHandlerFailed(ILogger logger, Exception error);

    [LoggerMessage(EventId = 30, EventName = "EndPointsChanged", Level = LogLevel.Information,
        Message = "The Mux server {Service} now has {Count} instance(s): {Added} added, {Removed} removed " +
            "(removed ones finish their calls, then close).")]
    public static partial void EndPointsChanged(ILogger logger, string service, int count, int added, int removed);

    [LoggerMessage(EventId = 31, EventName = "ResolvedNone", Level = LogLevel.Warning,
        Message = "Resolving the Mux server {Service} gave no instance; keeping the {Count} known.")]
    public static partial void ResolvedNone(ILogger logger, string service, int count);

    [LoggerMessage(EventId = 32, EventName = "ResolveFailed", Level = LogLevel.Warning,
        Message = "Resolving the Mux server {Service} failed; keeping the {Count} known instance(s) and trying again later.")]
    public static partial void ResolveFailed(ILogger logger, string service, int count, Exception error);

    [LoggerMessage(EventId = 33, EventName = "ResolverIgnoredCancellation", Level = LogLevel.Warning,
        Message = "The resolver of the Mux server {Service} did not return within {Timeout} (MuxClientOptions.ConnectTimeout) " +
            "of the client's disposal cancelling its ask; the disposal no longer waits for it.")]
    public static partial void ResolverIgnoredCancellation(ILogger logger, string service, string timeout);

    [LoggerMessage(EventId = 34, EventName = "RemovedInstanceDrained", Level = LogLevel.Debug,
        Message = "The Mux server at {Server}, no longer among the instances, has no call left on a connection: closing it.")]
    public static partial void RemovedInstanceDrained(ILogger logger, string server);
}
