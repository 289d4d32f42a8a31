namespace Mux.Connection;

/// <summary>
/// Deadlines kept as <see cref="TimeProvider"/> timestamps of the client's (or server's) <c>TimeProvider</c>, with <see cref="Never"/> for
/// none: a long compares and stores without the allocation a CancellationTokenSource per wait would cost, it is immune to wall-clock
/// changes, and a test moves it with a fake clock.
/// </summary>
internal static class ClockDeadline
{
    public const long Never = long.MaxValue;

    /// <summary><paramref name="timeout"/> in <paramref name="clock"/>'s timestamp units; <see cref="Never"/> for
    /// <see cref="Timeout.InfiniteTimeSpan"/> or a span too long to add to a timestamp.</summary>
    public static long ToTimestampSpan(TimeProvider clock, TimeSpan timeout)
    {
        if (timeout == Timeout.InfiniteTimeSpan)
        {
            return Never;
        }

        double span = timeout.Ticks * ((double)clock.TimestampFrequency / TimeSpan.TicksPerSecond);
        return span >= Never ? Never : (long)span;
    }

    /// <summary>The deadline <paramref name="span"/> (timestamp units, see <see cref="ToTimestampSpan"/>) after <paramref name="now"/>;
    /// <see cref="Never"/> when it would not fit.</summary>
    public static long After(long now, long span) => span >= Never - now ? Never : now + span;

    /// <summary>The deadline <paramref name="timeout"/> from now; <see cref="Never"/> for <see cref="Timeout.InfiniteTimeSpan"/>.</summary>
    public static long After(TimeProvider clock, TimeSpan timeout) =>
        timeout == Timeout.InfiniteTimeSpan ? Never : After(clock.GetTimestamp(), ToTimestampSpan(clock, timeout));

    /// <summary>How long a wait may last before <paramref name="deadline"/>: infinite for <see cref="Never"/>; false once it has passed, so
    /// the caller throws its own timeout.</summary>
    public static bool TryGetRemaining(TimeProvider clock, long deadline, out TimeSpan remaining)
    {
        if (deadline == Never)
        {
            remaining = Timeout.InfiniteTimeSpan;
            return true;
        }

        long now = clock.GetTimestamp();
        remaining = now < deadline ? clock.GetElapsedTime(now, deadline) : TimeSpan.Zero;
        return now < deadline;
    }
}
