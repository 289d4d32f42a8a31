using System.Diagnostics;
using Microsoft.Extensions.Logging;
using Mux.Diagnostics;

namespace Mux.Connection;

/// <summary>
/// The server's <see cref="MuxServerOptions.MaxConcurrentCalls"/>: one count of running calls shared by every connection of
/// one server, taken by a reader loop before a call is dispatched and given back with the call's connection slot. Exists only
/// when the option is set, so a server without the cap pays a null test per request and nothing else.
/// </summary>
internal sealed class ServerCallLimit
{
    // Refusals are logged at most once per this long, each line with the count since the last one.
    private static readonly TimeSpan s_logInterval = TimeSpan.FromSeconds(1);

    private readonly int _limit;
    private readonly TimeProvider _clock;

    // Calls of every connection holding a permit. Taken with compare-and-swap by reader loops, given back by finishers.
    private int _running;

    // Every refusal so far, for the load runner and tests. Refusing reader loops only.
    private long _refused;

    // Refusals not yet in a log line; the timestamp before which no line is written. Any reader loop that refuses.
    private long _unlogged;
    private long _nextLogAt;

    public ServerCallLimit(int limit, TimeProvider clock)
    {
        _limit = limit;
        _clock = clock;

        // Made once: a refusal must cost no more than the smallest answer, so its message is never formatted per call.
        RefusalMessage = $"The server did not run the call: it already runs {limit} calls, the most it allows at once " +
            "(MuxServerOptions.MaxConcurrentCalls). The call never ran; it is safe to retry, on another server if there is one.";
    }

    public int Limit => _limit;

    public string RefusalMessage { get; }

    public int Running => Volatile.Read(ref _running);

    public long Refused => Interlocked.Read(ref _refused);

    /// <summary>Takes a permit if fewer than the limit run. Exact: a compare-and-swap never lets the count pass the limit, not even
    /// for a moment, so a call is never refused for a permit another call only looked at.</summary>
    public bool TryEnter()
    {
        int seen = Volatile.Read(ref _running);
        while (seen < _limit)
        {
            int before = Interlocked.CompareExchange(ref _running, seen + 1, seen);
            if (before == seen)
            {
                return true;
            }

            seen = before;
        }

        return false;
    }

    public void Exit()
    {
        int left = Interlocked.Decrement(ref _running);
        Debug.Assert(left >= 0, "A permit is given back once.");
    }

    /// <summary>Counts a refusal in the meter and, at most once per second across the server, in the log.</summary>
    public void OnRefused(ILogger logger)
    {
        if (MuxTelemetry.ServerCallsOverloaded.Enabled)
        {
            MuxTelemetry.ServerCallsOverloaded.Add(1);
        }

        Interlocked.Increment(ref _refused);
        Interlocked.Increment(ref _unlogged);
        long now = _clock.GetTimestamp();
        long next = Volatile.Read(ref _nextLogAt);
        if (now < next
            || Interlocked.CompareExchange(ref _nextLogAt, now + (long)(s_logInterval.TotalSeconds * _clock.TimestampFrequency), next) != next)

        {
            return; // Logged less than a second ago, or another reader loop writes this line.
        }

        long refused = Interlocked.Exchange(ref _unlogged, 0);
        ConnectionLog.CallsOverloaded(logger, refused, _limit);
    }
}
