using System.Collections.Concurrent;

namespace Mux.Tests.Client.Balancing;

/// <summary>The contract of the balancing tests: each server instance counts the calls it ran.</summary>
[MuxService]
public interface IBalanceProbe
{
    /// <summary>Returns <paramref name="value"/> (once the instance's held calls are released,
    /// while it holds them).</summary>
    ValueTask<int> Serve(int value);
}

/// <summary>One server instance of <see cref="IBalanceProbe"/>; <see cref="HoldCalls"/> makes it
/// one whose calls stay pending until the test lets them go (a slow instance, without a clock).</summary>
public sealed class BalanceProbe : IBalanceProbe
{
    private int _served;
    private int _holding;

    // Serve waits for it while set: set by HoldCalls, completed and cleared by ReleaseHeldCalls
    // (the test's thread); read by every Serve.
    private volatile TaskCompletionSource? _hold;

    public int Served => Volatile.Read(ref _served);

    /// <summary>Calls waiting in Serve for <see cref="ReleaseHeldCalls"/> now.</summary>
    public int Holding => Volatile.Read(ref _holding);

    /// <summary>How many times this instance ran Serve, by value (the tests give every call its own).</summary>
    public ConcurrentDictionary<int, int> Runs { get; } = new();

    /// <summary>From now on, each call waits in Serve until <see cref="ReleaseHeldCalls"/>.</summary>
    public void HoldCalls() => _hold = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);

    /// <summary>Lets the held calls return; later calls are no longer held.</summary>
    public void ReleaseHeldCalls()
    {
        TaskCompletionSource? hold = _hold;
        _hold = null;
        hold?.TrySetResult();
    }

    public async ValueTask<int> Serve(int value)
    {
        Interlocked.Increment(ref _served);
        Runs.AddOrUpdate(value, 1, static (_, runs) => runs + 1);
        if (_hold is { } hold)
        {
            Interlocked.Increment(ref _holding);
            try
            {
                await hold.Task.ConfigureAwait(false);
            }
            finally
            {
                Interlocked.Decrement(ref _holding);
            }
        }

        return value;
    }
}
