namespace Mux;

/// <summary>
/// The Mux call a server handler is serving, seen from any code the handler runs (it flows with
/// the handler's <see cref="ExecutionContext"/>, across awaits). A <see cref="MuxClient"/> call made
/// there inherits the served call's deadline, as grpc-dotnet propagates deadlines: its own deadline
/// becomes the earlier of its <see cref="MuxClientOptions.CallTimeout"/> and
/// <see cref="RemainingTime"/>, and that is what it sends to its server.
/// </summary>
/// <remarks>
/// A context exists only for a call whose caller sent a deadline (every Mux client does unless its
/// <see cref="MuxClientOptions.CallTimeout"/> is <see cref="Timeout.InfiniteTimeSpan"/>); a call
/// without one creates none and costs nothing extra. Work that must not inherit the deadline (it
/// outlives the handler) starts under <see cref="ExecutionContext.SuppressFlow"/>.
/// </remarks>
public sealed class MuxCallContext
{
    // The context of the handler running on this logical flow; set by MuxServerCall around the
    // handler's invocation, read by ClientConnection when it sends a Request. AsyncLocal, so each
    // handler (and whatever it awaits) sees its own.
    private static readonly AsyncLocal<MuxCallContext?> s_current = new();

    internal MuxCallContext(string methodName, long deadline)
    {
        MethodName = methodName;
        DeadlineTimestamp = deadline;
        Deadline = DateTime.UtcNow.AddMilliseconds(Math.Max(0, deadline - Environment.TickCount64));
    }

    /// <summary>
    /// The call being served on this flow, or <see langword="null"/> outside a handler and in the
    /// handler of a call that carries no deadline.
    /// </summary>
    public static MuxCallContext? Current => s_current.Value;

    /// <summary>"IService.Method" of the call being served.</summary>
    public string MethodName { get; }

    /// <summary>When the caller gives up on the call (UTC, by this machine's clock: the caller sends
    /// its remaining time, not a point in time, so the two clocks need not agree). The handler's
    /// <see cref="CancellationToken"/> fires then.</summary>
    public DateTime Deadline { get; }

    /// <summary>The time left until <see cref="Deadline"/>; <see cref="TimeSpan.Zero"/> once it has passed.</summary>
    public TimeSpan RemainingTime => TimeSpan.FromMilliseconds(Math.Max(0, DeadlineTimestamp - Environment.TickCount64));

    /// <summary>The deadline as <see cref="Environment.TickCount64"/> milliseconds, a monotonic clock.</summary>
    internal long DeadlineTimestamp { get; }

    /// <summary>Makes <paramref name="context"/> the current one on this thread's flow; returns the
    /// previous one, for <see cref="Restore"/>.</summary>
    internal static MuxCallContext? Enter(MuxCallContext context)
    {
        MuxCallContext? previous = s_current.Value;
        s_current.Value = context;
        return previous;
    }

    /// <summary>Undoes <see cref="Enter"/> once the handler's synchronous part has returned (its
    /// awaits captured the context they need).</summary>
    internal static void Restore(MuxCallContext? previous) => s_current.Value = previous;
}
