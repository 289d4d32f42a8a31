using Microsoft.Extensions.Logging;

namespace Mux.Client.Balancing;

/// <summary>
/// What a client over several server instances logs about the set (category "Mux.Client"); each
/// instance's connection logs through <see cref="ClientLog"/>. Event ids 30–39.
/// </summary>
internal static partial class BalancingLog
{
    [LoggerMessage(EventId = 30, EventName = "EndPointsChanged", Level = LogLevel.Information, Message = "The Mux server {Service} now has {Count} instance(s): {Added} added, {Removed} removed (removed ones finish their calls, then close).")]
    public static partial void EndPointsChanged(ILogger logger, string service, int count, int added, int removed);

    [LoggerMessage(EventId = 31, EventName = "ResolvedNone", Level = LogLevel.Warning, Message = "Resolving the Mux server {Service} gave no instance; keeping the {Count} known.")]
    public static partial void ResolvedNone(ILogger logger, string service, int count);

    [LoggerMessage(EventId = 32, EventName = "ResolveFailed", Level = LogLevel.Warning, Message = "Resolving the Mux server {Service} failed; keeping the {Count} known instance(s) and trying again later.")]
    public static partial void ResolveFailed(ILogger logger, string service, int count, Exception error);
}
