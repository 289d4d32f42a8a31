namespace Mux.Samples.Progress;

/// <summary>The server side: each step reports to the client that called, and waits for its answer.</summary>
public sealed class Jobs : IJobs
{
    public async Task<string> Run(string job, int steps, MuxCallContext? context = null)
    {
        ArgumentNullException.ThrowIfNull(context);
        ArgumentOutOfRangeException.ThrowIfLessThan(steps, 1);

        // A proxy of the caller's IProgressSink: its calls travel back on the caller's connection.
        IProgressSink progress = context.GetClientProxy<IProgressSink>();
        for (int step = 1; step <= steps; step++)
        {
            await Task.Yield(); // The step's work would run here.
            if (!await progress.Report(job, step * 100 / steps).ConfigureAwait(false))
            {
                return $"{job} stopped by the client after step {step} of {steps}";
            }
        }

        return $"{job} done in {steps} steps";
    }
}
