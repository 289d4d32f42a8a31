using System.Diagnostics;
using Microsoft.Extensions.Time.Testing;
using Mux.Connection;
using Mux.Tests.Infrastructure;

namespace Mux.Tests.Connection;

/// <summary>The writer's batching policy (issue 24, docs/benchmarks.md "Batching policy"): a small
/// batch waits for more frames once, only while more are expected and only while its frames are
/// fresh (under <see cref="BatchingPolicy.Bound"/> by the connection's clock); a lone call never
/// waits; and a wait never needs the clock to move for the batch to be flushed.</summary>
public class BatchingPolicyTests
{
    private const int MaxRounds = 20;

    [Fact]
    public void ASmallBatch_WithWorkQueuedAndCallsInFlight_Waits_UntilItMayHaveWaitedTheBound()
    {
        var time = new FakeTimeProvider();
        var load = new Load(time) { TurnStartedAt = time.GetTimestamp() };

        time.Advance(BatchingPolicy.Bound - TimeSpan.FromMicroseconds(1));
        Assert.True(BatchingPolicy.ShouldWait(ref load));

        time.Advance(TimeSpan.FromMicroseconds(1));
        Assert.False(BatchingPolicy.ShouldWait(ref load));
    }

    [Fact]
    public void ABatchThatIsNotSmall_IsFlushedAtOnce_WithoutReadingTheClock()
    {
        var time = new FakeTimeProvider();
        var byFrames = new Load(time) { QueuedFrames = BatchingPolicy.SmallBatchFrames, TurnStartedAt = time.GetTimestamp() };
        var byBytes = new Load(time) { QueuedBytes = BatchingPolicy.SmallBatchBytes, TurnStartedAt = time.GetTimestamp() };

        Assert.False(BatchingPolicy.ShouldWait(ref byFrames));
        Assert.False(BatchingPolicy.ShouldWait(ref byBytes));
        Assert.Equal(0, byFrames.Reads.Clock + byBytes.Reads.Clock);
    }

    [Fact]
    public void WhenNoMoreFramesAreExpected_TheBatchIsFlushedAtOnce_WithoutReadingTheClock()
    {
        var time = new FakeTimeProvider();
        var quiet = new Load(time) { IsQuiet = true, TurnStartedAt = time.GetTimestamp() };
        var noWork = new Load(time) { WorkQueued = false, TurnStartedAt = time.GetTimestamp() };

        Assert.False(BatchingPolicy.ShouldWait(ref quiet));
        Assert.False(BatchingPolicy.ShouldWait(ref noWork));
        Assert.Equal(0, quiet.Reads.Clock + noWork.Reads.Clock);
    }

    [Fact]
    public async Task ALoneCallAtATime_IsFlushedByItsSender_AndNeverWaits()
    {
        var time = new FakeTimeProvider(); // Frozen: a wait would be within the bound forever.
        await using TestHost host = await TestHost.StartInMemoryAsync(
            new MuxServerOptions { TimeProvider = time },
            new MuxClientOptions { TimeProvider = time, CallTimeout = Timeout.InfiniteTimeSpan });
        MuxConnectionStatistics before = host.Client.GetStatistics();

        for (int i = 0; i < 200; i++)
        {
            Assert.Equal(i + 1, await host.Proxy.Add(i, 1).AsTask().WaitAsync(TestHost.Patience));
        }

        MuxConnectionStatistics after = host.Client.GetStatistics();
        Assert.Equal(0, host.Client.Connection.Outbound.BatchWaits);
        Assert.Equal(0, host.Server.Connections.Single().Outbound.BatchWaits);
        Assert.Equal(200, after.FramesSent - before.FramesSent);
        Assert.Equal(200, after.Flushes - before.Flushes); // Each Request flushed alone, by its caller.
    }

    [Fact]
    public async Task UnderLoad_WithAFrozenClock_SmallBatchesWait_AndEveryCallIsStillAnswered()
    {
        // The clock never moves, so every wait the policy takes is within the bound: if a batch
        // could wait more than once, or only a moving clock flushed it, these calls would hang.
        var time = new FakeTimeProvider();
        await using TestHost host = await TestHost.StartTcpAsync(
            new MuxServerOptions { TimeProvider = time },
            new MuxClientOptions { TimeProvider = time, CallTimeout = Timeout.InfiniteTimeSpan });

        // Whether a batch is small right after a flush while work is queued is up to the scheduler:
        // load in rounds until one has (in practice the first few).
        long waits = 0;
        for (int round = 0; round < MaxRounds && waits == 0; round++)
        {
            await RunCallersAsync(host);
            waits = host.Client.Connection.Outbound.BatchWaits + host.Server.Connections.Single().Outbound.BatchWaits;
        }

        Assert.True(waits > 0, $"No batch waited in {MaxRounds} rounds: the policy never engaged under load.");
    }

    [Fact]
    public async Task UnderLoad_WithAClockPastTheBoundAtEveryRead_NoBatchWaits()
    {
        var time = new LeapingClock(BatchingPolicy.Bound);
        await using TestHost host = await TestHost.StartTcpAsync(
            new MuxServerOptions { TimeProvider = time },
            new MuxClientOptions { TimeProvider = time, CallTimeout = Timeout.InfiniteTimeSpan });

        for (int round = 0; round < 5; round++)
        {
            await RunCallersAsync(host);
        }

        Assert.Equal(0, host.Client.Connection.Outbound.BatchWaits);
        Assert.Equal(0, host.Server.Connections.Single().Outbound.BatchWaits);
    }

    private static async Task RunCallersAsync(TestHost host)
    {
        const int Callers = 200;
        const int CallsEach = 50;
        Task[] callers = [.. Enumerable.Range(0, Callers).Select(c => Task.Run(async () =>
        {
            for (int i = 0; i < CallsEach; i++)
            {
                Assert.Equal(c + i, await host.Proxy.Add(c, i));
            }
        }))];
        await Task.WhenAll(callers).WaitAsync(TestHost.Patience);
    }

    /// <summary>A clock whose every timestamp read is <c>step</c> after the previous one, so any two
    /// reads are at least that far apart; timers are the system's.</summary>
    private sealed class LeapingClock(TimeSpan step) : TimeProvider
    {
        private readonly long _step = (long)(step.TotalSeconds * Stopwatch.Frequency);
        private long _now;

        public override long TimestampFrequency => Stopwatch.Frequency;

        public override long GetTimestamp() => Interlocked.Add(ref _now, _step);
    }

    /// <summary>How often the policy asked each question.</summary>
    private sealed class ReadCounts
    {
        public int Clock;
    }

    private struct Load(FakeTimeProvider time) : IBatchLoad
    {
        public ReadCounts Reads { get; } = new();

        public int QueuedFrames { get; set; } = 1;

        public int QueuedBytes { get; set; } = 20;

        public bool WorkQueued { get; set; } = true;

        public bool IsQuiet { get; set; }

        public readonly TimeProvider Clock
        {
            get
            {
                Reads.Clock++;
                return time;
            }
        }

        public long TurnStartedAt { get; set; }
    }
}
