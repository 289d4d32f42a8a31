using Microsoft.Extensions.Time.Testing;

namespace Mux.Tests.Infrastructure;

/// <summary>
/// A fake clock whose timers can be late: <see cref="Skip"/> moves the time it reads
/// (<see cref="GetTimestamp"/>, <see cref="GetUtcNow"/>) without firing any timer, as on a machine
/// too busy to run a due timer before the code that was waiting for something else goes on. So a
/// test can make a wait end (a slot freed, a connection up) after the deadline it was bounded by,
/// without that deadline's own timer having fired first. <see cref="Timers"/> is the fake clock the
/// timers run on, for a test that also wants them to fire.
/// </summary>
internal sealed class LateTimersClock : TimeProvider
{
    // Timestamp ticks added to the timers' clock by Skip. Written by the test thread, read by any.
    private long _skipped;

    /// <summary>The clock the timers are created on; advancing it fires them as usual.</summary>
    public FakeTimeProvider Timers { get; } = new();

    /// <summary>Moves the time this clock reads by <paramref name="time"/>; no timer fires.</summary>
    public void Skip(TimeSpan time) =>
        Interlocked.Add(ref _skipped, (long)(time.Ticks * ((double)Timers.TimestampFrequency / TimeSpan.TicksPerSecond)));

    public override long TimestampFrequency => Timers.TimestampFrequency;

    public override long GetTimestamp() => Timers.GetTimestamp() + Volatile.Read(ref _skipped);

    public override DateTimeOffset GetUtcNow() =>
        Timers.GetUtcNow() + TimeSpan.FromSeconds(Volatile.Read(ref _skipped) / (double)Timers.TimestampFrequency);

    public override TimeZoneInfo LocalTimeZone => Timers.LocalTimeZone;

    public override ITimer CreateTimer(TimerCallback callback, object? state, TimeSpan dueTime, TimeSpan period) =>
        Timers.CreateTimer(callback, state, dueTime, period);
}
