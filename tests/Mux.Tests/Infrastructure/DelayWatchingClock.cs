using System.Collections.Concurrent;
using Microsoft.Extensions.Time.Testing;

namespace Mux.Tests.Infrastructure;

/// <summary>A fake clock that records the due time of every <c>Task.Delay</c> made on it (the
/// waits of a balanced client's resolve loop and of the reconnect backoff), so a test knows when a
/// loop has started waiting for its next round (and for how long). Other timers on the same
/// clock are not those waits and are left out: the calls' expiry scan, the connect and handshake
/// timeouts (a CancellationTokenSource, a WaitAsync) and a closing connection's drain (a
/// WaitAsync of 1 s, which would look like a backoff step). A Task.Delay's timer is the one whose
/// state is the BCL's delay promise.</summary>
internal sealed class DelayWatchingClock : FakeTimeProvider
{
    private readonly ConcurrentQueue<TimeSpan> _dueTimes = new();

    /// <summary>The due times of the Task.Delay waits made so far, in order.</summary>
    public TimeSpan[] DueTimes => [.. _dueTimes];

    public override ITimer CreateTimer(TimerCallback callback, object? state, TimeSpan dueTime, TimeSpan period)
    {
        if (state?.GetType().Name.StartsWith("DelayPromise", StringComparison.Ordinal) == true)
        {
            _dueTimes.Enqueue(dueTime);
        }

        return base.CreateTimer(callback, state, dueTime, period);
    }
}
