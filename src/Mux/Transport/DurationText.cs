using System.Globalization;

namespace Mux.Transport;

/// <summary>"300 ms", "30 s", "2 min" in an error message, not "00:00:00.3000000".</summary>

internal static class DurationText
{
    public static string Format(TimeSpan value)
    {
        if (value == Timeout.InfiniteTimeSpan)
        {
            return "no limit";
        }

        CultureInfo invariant = CultureInfo.InvariantCulture;
        double ms = value.TotalMilliseconds;
        return ms switch
        {
            < 1000 => ms.ToString("0.###", invariant) + " ms",
            < 60_000 => value.TotalSeconds.ToString("0.###", invariant) + " s",
            < 3_600_000 => value.TotalMinutes.ToString("0.##", invariant) + " min",
            _ => value.TotalHours.ToString("0.##", invariant) + " h",
        };
    }
}
