namespace Mux.Client;

/// <summary>
/// The waits between reconnect attempts: exponential from <see cref="MuxClientOptions.ReconnectInitialDelay"/>
/// to <see cref="MuxClientOptions.ReconnectMaxDelay"/>, each shortened by up to 20% at random so
/// that the clients of one restarted server spread their attempts instead of arriving together.
/// Not thread-safe: one reconnect loop owns an instance.
/// </summary>
internal sealed class ReconnectBackoff
{
    private const double Jitter = 0.2;

    private readonly TimeSpan _initialDelay;
    private readonly TimeSpan _maxDelay;
    private TimeSpan _next;

    public ReconnectBackoff(TimeSpan initialDelay, TimeSpan maxDelay)
    {
        _initialDelay = initialDelay;
        _maxDelay = maxDelay;
        _next = initialDelay;
    }

    /// <summary>The wait before the next attempt; doubles the one after, up to the maximum.</summary>
    public TimeSpan NextDelay()
    {
        TimeSpan delay = _next;
        _next = TimeSpan.FromTicks(Math.Min(_maxDelay.Ticks, delay.Ticks * 2));
        return delay * (1 - (Jitter * Random.Shared.NextDouble()));
    }

    /// <summary>Starts over from the initial delay, after a successful connection.</summary>
    public void Reset() => _next = _initialDelay;
}
