namespace Mux.Tests.Client.Balancing;

/// <summary>The contract of the balancing tests: each server instance counts the calls it ran.</summary>
[MuxService]
public interface IBalanceProbe
{
    /// <summary>Returns <paramref name="value"/> (after the instance's delay, if it has one).</summary>
    ValueTask<int> Serve(int value);
}

/// <summary>One server instance of <see cref="IBalanceProbe"/>; a delay makes it a slow one.</summary>
public sealed class BalanceProbe(TimeSpan delay) : IBalanceProbe
{
    private int _served;

    public int Served => Volatile.Read(ref _served);

    public async ValueTask<int> Serve(int value)
    {
        Interlocked.Increment(ref _served);
        if (delay > TimeSpan.Zero)
        {
            await Task.Delay(delay).ConfigureAwait(false);
        }

        return value;
    }
}
