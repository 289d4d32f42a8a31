using Mux.Samples.Contracts;

namespace Mux.Samples.Load;

/// <summary>Runs the load for the configured time, or until the user stops it, printing
/// progress every second.</summary>
internal static class LoadRunner
{
    /// <summary>Runs <see cref="LoadOptions.Seconds"/> seconds (forever when 0) or until
    /// <paramref name="interrupt"/> fires; either way returns what the callers did.</summary>
    /// <returns>The result, or null when interrupted before the first call completed.</returns>
    public static async Task<LoadResult?> RunAsync(MuxClient client, IUserService users, LoadOptions options, TextWriter output, CancellationToken interrupt)
    {
        LoadLoop loop;
        try
        {
            loop = await LoadLoop.StartAsync(client, users, options.Method, options.Callers, interrupt);
        }
        catch (OperationCanceledException) when (interrupt.IsCancellationRequested)
        {
            return null;
        }

        long previous = 0;
        for (int second = 1; options.Seconds == 0 || second <= options.Seconds; second++)
        {
            // A loop, not one delay: the timer behind Task.Delay may fire a hair before the run's
            // stopwatch reaches the second (seen: 0.9997 s), and the line says a whole second passed.
            TimeSpan wait;
            while ((wait = TimeSpan.FromSeconds(second) - loop.Elapsed) > TimeSpan.Zero && !interrupt.IsCancellationRequested)
            {
                await Task.Delay(wait, interrupt).ConfigureAwait(ConfigureAwaitOptions.SuppressThrowing);
            }

            if (interrupt.IsCancellationRequested)
            {
                break;
            }

            long total = loop.Calls;
            string state = client.State == MuxClientState.Connected ? string.Empty : $"  {client.State.ToString().ToLowerInvariant()}";
            output.WriteLine($"[{second,3}s] {total - previous,10:N0} calls/s  total {total,12:N0}  errors {loop.Errors}{state}");
            previous = total;
        }

        return await loop.StopAsync();
    }
}
