using System.Diagnostics;

namespace Mux.LoadRunner;

/// <summary>What the callers measured in the window.</summary>
/// <param name="Calls">Calls that completed inside the window.</param>
/// <param name="WindowSeconds">The window's real length.</param>
/// <param name="Latency">Latencies of those calls, merged over the callers.</param>
/// <param name="Errors">Calls that failed, warm-up included.</param>
/// <param name="FirstError">The first failure's type and message.</param>
/// <param name="StoppedCleanly">Whether every caller finished its last call before the stop timeout.</param>
/// <param name="Failure">What ended the run early (a window callback threw), if anything.</param>
/// <param name="DuringBlocks">With <see cref="BlockWindows"/>: the latencies of the window's calls
/// that overlapped a blocking call (in flight at their start or end, or starting or ending
/// between them); null without.</param>
/// <param name="Quiet">With <see cref="BlockWindows"/>: the latencies of the other calls of the window.</param>
internal sealed record LoadWindow(
    long Calls,
    double WindowSeconds,
    LatencyHistogram Latency,
    long Errors,
    string? FirstError,
    bool StoppedCleanly,
    string? Failure,
    LatencyHistogram? DuringBlocks = null,
    LatencyHistogram? Quiet = null);

/// <summary>
/// --blocking-handler: when a blocking call is in flight, for the callers to sort their own calls by.
/// An epoch that the blocking caller bumps as each blocking call starts and again as it ends, so it
/// is odd while one is in flight: a call that saw the same even epoch at its start and its end
/// overlapped none; any other call overlapped one (even one that started before a blocking call
/// and ended after it, the call a stalled connection would hold longest).
/// </summary>
internal sealed class BlockWindows
{
    private long _epoch;

    public long Epoch => Volatile.Read(ref _epoch);

    public void Enter() => Interlocked.Increment(ref _epoch);

    public void Exit() => Interlocked.Increment(ref _epoch);

    public static bool Overlapped(long atStart, long atEnd) => atStart != atEnd || (atStart & 1) != 0;
}

/// <summary>
/// Closed-loop load: N callers, each awaiting its own call and then making the next, on one
/// shared client. A call counts (and its latency is recorded) when it completes inside the
/// measured window, whenever it started; the window opens after the warm-up.
/// </summary>
internal static class ClosedLoop
{
    public static async Task<LoadWindow> RunAsync(
        IBenchClient client,
        int callers,
        TimeSpan warmup,
        TimeSpan window,
        Action onWindowStart,
        Action onWindowEnd,
        TimeSpan stopTimeout,
        BlockWindows? blocks = null)
    {
        // Per thread, not per caller: with thousands of callers, a 9 KB histogram and a count per caller put cold cache
        // lines in every call's path, and the harness's own cost grew with the callers.
        var tallies = new ThreadLocal<WindowTally>(() => new WindowTally(), trackAllValues: true);
        LatencyHistogram[]? duringBlocks = blocks is null ? null : new LatencyHistogram[callers];
        LatencyHistogram[]? quiet = blocks is null ? null : new LatencyHistogram[callers];
        for (int i = 0; blocks is not null && i < callers; i++)
        {
            duringBlocks![i] = new LatencyHistogram();
            quiet![i] = new LatencyHistogram();
        }

        long windowStart = long.MaxValue;
        long windowEnd = long.MaxValue;
        int stop = 0;
        long errors = 0;
        string? firstError = null;

        async Task CallerAsync(int index)
        {
            await Task.Yield();
            while (Volatile.Read(ref stop) == 0)
            {
                long epochAtStart = blocks?.Epoch ?? 0;
                long start = Stopwatch.GetTimestamp();
                try
                {
                    await client.CallAsync(index);
                }
                catch (Exception ex)
                {
                    Interlocked.Increment(ref errors);
                    Interlocked.CompareExchange(ref firstError, ex.GetType().Name + ": " + ex.Message, null);
                    await Task.Delay(10); // a broken connection must not turn callers into a busy loop
                    continue;
                }

                long end = Stopwatch.GetTimestamp();
                if (end >= Volatile.Read(ref windowStart) && end <= Volatile.Read(ref windowEnd))
                {
                    long ticks = Stopwatch.GetElapsedTime(start, end).Ticks;
                    WindowTally tally = tallies.Value!;
                    tally.Latency.Record(ticks);
                    tally.Calls++;
                    if (blocks is not null)
                    {
                        (BlockWindows.Overlapped(epochAtStart, blocks.Epoch) ? duringBlocks! : quiet!)[index].Record(ticks);
                    }
                }
            }
        }

        var tasks = new Task[callers];
        for (int i = 0; i < callers; i++)
        {
            tasks[i] = CallerAsync(i);
        }

        long opened = 0;
        long closed = 0;
        bool stoppedCleanly = true;
        string? failure = null;
        try
        {
            await Task.Delay(warmup);
            onWindowStart();
            opened = Stopwatch.GetTimestamp();
            Volatile.Write(ref windowStart, opened);

            await Task.Delay(window);
            closed = Stopwatch.GetTimestamp();
            Volatile.Write(ref windowEnd, closed);
            onWindowEnd();
        }
        catch (Exception ex)
        {
            failure = ex.GetType().Name + ": " + ex.Message;
        }
        finally
        {
            // Whatever happened, no caller outlives the point.
            Volatile.Write(ref stop, 1);
            try
            {
                await Task.WhenAll(tasks).WaitAsync(stopTimeout);
            }
            catch (TimeoutException)
            {
                stoppedCleanly = false;
            }
        }

        var merged = new LatencyHistogram();
        LatencyHistogram? mergedDuringBlocks = blocks is null ? null : new LatencyHistogram();
        LatencyHistogram? mergedQuiet = blocks is null ? null : new LatencyHistogram();
        long calls = 0;
        foreach (WindowTally tally in tallies.Values)
        {
            merged.Merge(tally.Latency);
            calls += tally.Calls;
        }

        for (int i = 0; blocks is not null && i < callers; i++)
        {
            mergedDuringBlocks!.Merge(duringBlocks![i]);
            mergedQuiet!.Merge(quiet![i]);
        }

        if (stoppedCleanly)
        {
            tallies.Dispose(); // A caller still running would find it disposed.
        }

        double seconds = closed > opened ? Stopwatch.GetElapsedTime(opened, closed).TotalSeconds : 0;
        return new LoadWindow(calls, seconds, merged, Interlocked.Read(ref errors), Volatile.Read(ref firstError), stoppedCleanly, failure, mergedDuringBlocks, mergedQuiet);
    }

    /// <summary>One thread's calls in the window: written only by that thread, read once every caller has stopped.</summary>
    private sealed class WindowTally
    {
        public readonly LatencyHistogram Latency = new();
        public long Calls;
    }
}
