namespace Mux.Client;

/// <summary>
/// Deadlines kept as <see cref="Environment.TickCount64"/> milliseconds, with <see cref="Never"/>
/// for none: a long compares and stores without the allocation or clock reads a
/// CancellationTokenSource per wait would cost, and it is immune to wall-clock changes.
/// </summary>
internal static class TickDeadline
{
    /// <summary>No deadline.</summary>
    public const long Never = long.MaxValue;

    /// <summary>The deadline <paramref name="timeout"/> from now; <see cref="Never"/> for
    /// <see cref="Timeout.InfiniteTimeSpan"/>.</summary>
    public static long After(TimeSpan timeout) =>
        timeout == Timeout.InfiniteTimeSpan ? Never : Environment.TickCount64 + (long)timeout.TotalMilliseconds;

    /// <summary>How long a wait may last before <paramref name="deadline"/>: infinite for
    /// <see cref="Never"/>; false once it has passed, so the caller throws its own timeout.</summary>
    public static bool TryGetRemaining(long deadline, out TimeSpan remaining)
    {
        if (deadline == Never)
        {
            remaining = Timeout.InfiniteTimeSpan;
            return true;
        }

        long left = deadline - Environment.TickCount64;
        remaining = TimeSpan.FromMilliseconds(Math.Max(0, left));
        return left > 0;
    }
}
