namespace Mux.Samples.Load;

/// <summary>What a load run did, for the summary line and its JSON.</summary>
/// <param name="Calls">Calls that returned the expected result.</param>
/// <param name="Errors">Calls that failed, by kind.</param>
/// <param name="Seconds">How long the callers ran.</param>
/// <param name="P50Us">Median latency of the successful calls, in microseconds.</param>
/// <param name="P99Us">99th percentile latency of the successful calls, in microseconds.</param>
/// <param name="Reconnects">How many times the client reconnected during the run.</param>
internal sealed record LoadResult(long Calls, ErrorCounts Errors, double Seconds, long P50Us, long P99Us, int Reconnects)
{
    public double CallsPerSecond => Seconds > 0 ? Calls / Seconds : 0;
}
