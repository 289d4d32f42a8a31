using Mux.Tests.Infrastructure;
using System.Collections.Concurrent;

namespace Mux.Tests.Client.Balancing;

/// <summary>Callers that each call <see cref="IBalanceProbe.Serve"/> in a loop until stopped, and
/// count how every call ended: each call ends exactly once, as a success or as a failure.</summary>
public sealed class CallerLoad : IAsyncDisposable
{
    private readonly CancellationTokenSource _stop = new();
    private readonly Task[] _callers;
    private int _started;
    private int _succeeded;
    private int _failed;

    public CallerLoad(IBalanceProbe proxy, int callers)
    {
        _callers = new Task[callers];
        for (int i = 0; i < callers; i++)
        {
            int caller = i;
            _callers[i] = Task.Run(() => CallAsync(proxy, caller));
        }
    }

    public int Started => Volatile.Read(ref _started);

    public int Succeeded => Volatile.Read(ref _succeeded);

    public int Failed => Volatile.Read(ref _failed);

    /// <summary>How each failed call failed.</summary>
    public ConcurrentQueue<Exception> Failures { get; } = new();

    /// <summary>Stops the callers after their current call and waits for them.</summary>
    public async Task StopAsync()
    {
        _stop.Cancel();
        await Task.WhenAll(_callers).WaitAsync(TestHost.Patience);
    }

    /// <summary>Stops the callers even when the test failed before it stopped them.</summary>
    public async ValueTask DisposeAsync()
    {
        _stop.Cancel();
        await Task.WhenAll(_callers).WaitAsync(TestHost.Patience).ConfigureAwait(false);
        _stop.Dispose();
    }

    private async Task CallAsync(IBalanceProbe proxy, int caller)
    {
        for (int i = 0; !_stop.IsCancellationRequested; i++)
        {
            int value = (caller * 1_000_000) + i;
            Interlocked.Increment(ref _started);
            try
            {
                int result = await proxy.Serve(value);
                Assert.Equal(value, result);
                Interlocked.Increment(ref _succeeded);
            }
            catch (Exception ex)
            {
                Failures.Enqueue(ex);
                Interlocked.Increment(ref _failed);
            }
        }
    }
}
