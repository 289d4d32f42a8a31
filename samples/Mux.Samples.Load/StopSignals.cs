using System.Runtime.InteropServices;

namespace Mux.Samples.Load;

/// <summary>
/// Turns Ctrl+C (SIGINT) and SIGTERM into a cancellation, so the sample can stop its callers and
/// still print its summary. A second signal is not caught: it ends the process the usual way,
/// for when stopping itself hangs.
/// </summary>
internal sealed class StopSignals : IDisposable
{
    // Cancelled by the first signal (on the runtime's signal thread); read by the run.
    private readonly CancellationTokenSource _stop = new();
    private readonly PosixSignalRegistration _interrupt;
    private readonly PosixSignalRegistration _terminate;

    public StopSignals()
    {
        _interrupt = PosixSignalRegistration.Create(PosixSignal.SIGINT, OnSignal);
        _terminate = PosixSignalRegistration.Create(PosixSignal.SIGTERM, OnSignal);
    }

    /// <summary>Cancelled when the user asks the process to stop.</summary>
    public CancellationToken Token => _stop.Token;

    private void OnSignal(PosixSignalContext context)
    {
        if (_stop.IsCancellationRequested)
        {
            return;
        }

        context.Cancel = true;
        Console.Error.WriteLine($"{context.Signal}: stopping (signal again to exit at once).");
        _stop.Cancel();
    }

    public void Dispose()
    {
        _interrupt.Dispose();
        _terminate.Dispose();
        _stop.Dispose();
    }
}
