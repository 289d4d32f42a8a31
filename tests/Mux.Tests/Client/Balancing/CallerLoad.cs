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

    // The calls each caller has ended so far (counted once each call's outcome is). Written by
    // that caller; read by the test.
    private readonly int[] _ended;

    public CallerLoad(IBalanceProbe proxy, int callers)
    {
        _callers = new Task[callers];
        _ended = new int[callers];
        for (int i = 0; i < callers; i++)
        {
            int caller = i;
            _callers[i] = Task.Run(() => CallAsync(proxy, caller));
        }
    }

    public int Started => Volatile.Read(ref _started);

    public int Succeeded => Volatile.Read(ref _succeeded);

    public int Failed => Volatile.Read(ref _failed);

    /// <summary>The value of each call that succeeded (a caller's values are its own: caller * 1,000,000 + i).</summary>
    public ConcurrentQueue<int> SucceededValues { get; } = new();

    /// <summary>How each failed call failed.</summary>
    public ConcurrentQueue<Exception> Failures { get; } = new();

    /// <summary>How many calls each caller has ended so far, its outcome counted.</summary>
    public int[] EndedPerCaller()
    {
        var ended = new int[_ended.Length];
        for (int i = 0; i < ended.Length; i++)
        {
            ended[i] = Volatile.Read(ref _ended[i]);
        }

        return ended;
    }

    /// <summary>Whether every caller has ended a call since <paramref name="snapshot"/> (from
    /// <see cref="EndedPerCaller"/>): then the call each had under way at the snapshot has ended,
    /// and how it ended is counted.</summary>
    public bool EveryCallerEndedACallSince(int[] snapshot)
    {
        for (int i = 0; i < snapshot.Length; i++)
        {
            if (Volatile.Read(ref _ended[i]) <= snapshot[i])
            {
                return false;
            }
        }

        return true;
    }

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
                SucceededValues.Enqueue(value);
                Interlocked.Increment(ref _succeeded);
            }
            catch (Exception ex)
            {
                Failures.Enqueue(ex);
                Interlocked.Increment(ref _failed);
            }

            Volatile.Write(ref _ended[caller], i + 1);
        }
    }
}
