namespace Mux.Client;

/// <summary>
/// Exponential waits between reconnect attempts, each shortened by up to 20% at random so that the clients of one restarted server spread
/// their attempts. Not thread-safe: one reconnect loop owns an instance.
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

    public void Reset() => _next = _initialDelay;
}
