namespace Mux.Samples.Load;

/// <summary>
/// The load's failed calls, by kind: the connection was lost or not there
/// (<see cref="MuxConnectionException"/>, what a server restart costs), the call timed out
/// (<see cref="TimeoutException"/>), or anything else (a wrong answer, a server error).
/// Thread-safe: every caller counts into the same instance.
/// </summary>
internal sealed class ErrorCounts
{
    // Incremented by the callers with Interlocked; read by the progress line and the summary.
    private long _connection;
    private long _timeout;
    private long _other;

    // The first failure's type and message, set once by whichever caller fails first.
    private string? _first;

    public long Connection => Interlocked.Read(ref _connection);

    public long Timeout => Interlocked.Read(ref _timeout);

    public long Other => Interlocked.Read(ref _other);

    public long Total => Connection + Timeout + Other;

    public string? First => Volatile.Read(ref _first);

    public void Count(Exception error)
    {
        switch (error)
        {
            case MuxConnectionException:
                Interlocked.Increment(ref _connection);
                break;
            case TimeoutException:
                Interlocked.Increment(ref _timeout);
                break;
            default:
                Interlocked.Increment(ref _other);
                break;
        }

        Interlocked.CompareExchange(ref _first, error.GetType().Name + ": " + error.Message, null);
    }

    public override string ToString() => $"{Total} (connection {Connection}, timeout {Timeout}, other {Other})";
}
