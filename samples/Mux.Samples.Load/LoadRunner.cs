using System.Diagnostics;
using Mux.Samples.Contracts;

namespace Mux.Samples.Load;

internal sealed record LoadResult(long Calls, long Errors, double CallsPerSecond, long P50Us, long P99Us, string? FirstError);

/// <summary>Closed-loop load: each caller awaits its call, then makes the next, until time is up.</summary>
internal static class LoadRunner
{
    // Each caller's completed-call count lives on its own cache line (stride of 16 longs) so that
    // counting does not make 500 cores fight over one line.
    private const int Stride = 16;

    public static async Task<LoadResult> RunAsync(IUserService users, LoadOptions options, TextWriter output)
    {
        Func<ValueTask> call = options.Method switch
        {
            "add" => async () =>
            {
                if (await users.Add(1, 2) != 3)
                {
                    throw new InvalidOperationException("Add(1, 2) did not return 3.");
                }
            },
            "list100" => async () => CheckList(await users.List(100), 100),
            _ => async () => CheckList(await users.List(1), 1),
        };

        await call(); // JIT and connect everything before the clock starts.

        var counts = new long[options.Callers * Stride];
        var histograms = new LatencyHistogram[options.Callers];
        long errors = 0;
        string? firstError = null;
        using var stop = new CancellationTokenSource();

        async Task CallerAsync(int index)
        {
            var histogram = histograms[index] = new LatencyHistogram();
            await Task.Yield();
            while (!stop.IsCancellationRequested)
            {
                long start = Stopwatch.GetTimestamp();
                try
                {
                    await call();
                    histogram.Record((long)Stopwatch.GetElapsedTime(start).TotalMicroseconds);
                    counts[index * Stride]++;
                }
                catch (Exception ex)
                {
                    Interlocked.Increment(ref errors);
                    Interlocked.CompareExchange(ref firstError, ex.GetType().Name + ": " + ex.Message, null);
                }
            }
        }

        var clock = Stopwatch.StartNew();
        var callers = new Task[options.Callers];
        for (int i = 0; i < callers.Length; i++)
        {
            callers[i] = CallerAsync(i);
        }

        long previous = 0;
        for (int second = 1; second <= options.Seconds; second++)
        {
            TimeSpan wait = TimeSpan.FromSeconds(second) - clock.Elapsed;
            if (wait > TimeSpan.Zero)
            {
                await Task.Delay(wait);
            }

            long total = Sum(counts);
            output.WriteLine($"[{second,3}s] {total - previous,10:N0} calls/s  total {total,12:N0}  errors {Interlocked.Read(ref errors)}");
            previous = total;
        }

        stop.Cancel();
        double elapsed = clock.Elapsed.TotalSeconds;
        await Task.WhenAll(callers);

        var merged = new LatencyHistogram();
        foreach (LatencyHistogram histogram in histograms)
        {
            merged.Add(histogram);
        }

        long calls = Sum(counts);
        return new LoadResult(calls, errors, calls / elapsed, merged.Percentile(50), merged.Percentile(99), firstError);
    }

    private static void CheckList(List<User> list, int expected)
    {
        if (list.Count != expected || list[0].City != "GuangZhou")
        {
            throw new InvalidOperationException($"List({expected}) returned {list.Count} users.");
        }
    }

    private static long Sum(long[] counts)
    {
        long total = 0;
        for (int i = 0; i < counts.Length; i += Stride)
        {
            total += Volatile.Read(ref counts[i]);
        }

        return total;
    }
}
