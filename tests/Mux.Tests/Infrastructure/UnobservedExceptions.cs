using System.Collections.Concurrent;

namespace Mux.Tests.Infrastructure;

/// <summary>
/// Collects the task exceptions nobody observed while it is alive (a faulted task dropped by the
/// library would otherwise pass unnoticed). The event is process-wide, so use it only in tests of
/// the <see cref="SerialCollection"/>; finalizers of earlier tests' garbage run before it listens.
/// </summary>
public sealed class UnobservedExceptions : IDisposable
{
    private readonly ConcurrentQueue<Exception> _seen = new();

    public UnobservedExceptions()
    {
        CollectGarbage();
        TaskScheduler.UnobservedTaskException += OnUnobserved;
    }

    /// <summary>Runs the finalizers of dropped tasks, then fails if any of them had faulted.</summary>
    public void AssertNone()
    {
        CollectGarbage();
        Assert.True(_seen.IsEmpty, $"Unobserved task exceptions: {string.Join(" | ", _seen.Select(e => e.GetBaseException().ToString()))}");
    }

    public void Dispose() => TaskScheduler.UnobservedTaskException -= OnUnobserved;

    private void OnUnobserved(object? sender, UnobservedTaskExceptionEventArgs e) => _seen.Enqueue(e.Exception);

    private static void CollectGarbage()
    {
        GC.Collect();
        GC.WaitForPendingFinalizers();
        GC.Collect();
    }
}
