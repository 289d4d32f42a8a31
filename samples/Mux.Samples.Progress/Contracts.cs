namespace Mux.Samples.Progress;

/// <summary>What the server offers: jobs that report their progress to the caller as they run.</summary>
[MuxService]
public interface IJobs
{
    /// <summary>Runs <paramref name="job"/> in <paramref name="steps"/> steps, reporting each to the
    /// calling client's <see cref="IProgressSink"/>; returns a summary once done.</summary>
    /// <param name="job">The job's name.</param>
    /// <param name="steps">How many steps the job takes.</param>
    /// <param name="context">Filled by Mux on the server (never sent): the call, and its caller.</param>
    Task<string> Run(string job, int steps, MuxCallContext? context = null);
}

/// <summary>What the client offers the server: a place to report progress to.</summary>
[MuxService]
public interface IProgressSink
{
    /// <summary>The job has reached <paramref name="percent"/>; returns false to ask it to stop.</summary>
    ValueTask<bool> Report(string job, int percent);
}
