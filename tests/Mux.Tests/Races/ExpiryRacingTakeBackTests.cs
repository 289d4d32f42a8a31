using System.Diagnostics;
using System.Net.Sockets;
using Mux.Connection;
using Mux.Tests.Infrastructure;

namespace Mux.Tests.Races;

/// <summary>
/// A call made once the connection stopped sending enters the pending table, sees the stop, and takes
/// itself back unsent. The expiry scan may take it first, between those two steps: the scan fails it and
/// keeps its slot for an answer that will never come, since the Request never went out. The call gave
/// nothing back then: its slot stayed taken and its id stayed among the calls given up on, for good.
/// Nothing in between can be paused, so this test races the two many times: the scan runs on a thread of
/// its own, over and over, and sees every call as expired, while the test makes calls until some lost.
/// </summary>
public sealed class ExpiryRacingTakeBackTests
{
    private const int Cap = 1000;

    [Fact]
    public async Task ACallTheScanTakesBeforeItTakesItselfBackAfterAStop_GivesItsSlotBack()
    {
        var clock = new ScanningClock();
        using TcpListener listener = RawMuxPeer.Listen();
        var options = new MuxClientOptions { TimeProvider = clock, KeepAliveInterval = Timeout.InfiniteTimeSpan, AutoReconnect = false };
        Task<MuxClient> connecting = MuxClient.ConnectAsync(listener.LocalEndpoint, options);
        await using RawMuxPeer peer = await RawMuxPeer.AcceptAsync(listener);
        await peer.AnswerHelloAsync(maxConcurrentCalls: Cap);
        MuxClient client = await connecting.WaitAsync(TestHost.Patience);
        try
        {
            OutgoingCalls outgoing = client.Connection.Outgoing;
            await outgoing.StopSending().WaitAsync(TestHost.Patience);

            // The client sends nothing on a connection that stopped: the calls go to its Outgoing directly. The first
            // starts the scan's timer, which the clock keeps for the scanning thread.
            await Assert.ThrowsAsync<MuxConnectionException>(() => Call(outgoing, clock).AsTask()).WaitAsync(TestHost.Patience);
            Assert.NotNull(clock.Scan);

            using var stop = new CancellationTokenSource();
            Thread scanner = new(() => clock.ScanUntil(stop.Token)) { IsBackground = true };
            scanner.Start();
            var taken = new List<Task<int>>();
            DateTime giveUpAt = DateTime.UtcNow + TestHost.Patience;
            while (taken.Count < 5 && DateTime.UtcNow < giveUpAt)
            {
                Task<int> call = Call(outgoing, clock).AsTask();
                if (call.IsCompleted && call.Exception?.InnerException is MuxConnectionException)
                {
                    continue; // Taken back unsent, as almost every call is.
                }

                taken.Add(call); // The scan took it first (it may have failed it already): it fails as timed out.
            }

            stop.Cancel();
            scanner.Join();
            Assert.True(taken.Count != 0, $"The scan never took a call between its add and its take-back within {TestHost.Patience}.");
            foreach (Task<int> call in taken)
            {
                await Assert.ThrowsAsync<TimeoutException>(() => call).WaitAsync(TestHost.Patience);
            }

            // No Request went out, so no answer frees a slot: each call taken gave its own back.
            Assert.Equal((Cap, 0), outgoing.SlotAccount);
        }
        finally
        {
            peer.Close();
            await client.DisposeAsync().AsTask().WaitAsync(TestHost.Patience);
        }
    }

    private static ValueTask<int> Call(OutgoingCalls outgoing, TimeProvider clock)
    {
        CallDeadline deadline = CallDeadline.Fix(clock, ClockDeadline.ToTimestampSpan(clock, TimeSpan.FromSeconds(1)), null, inherits: false, 0, out long now);
        return outgoing.InvokeAsync<int, int>(1, 0, deadline, now, CancellationToken.None);
    }

    /// <summary>A clock that stands still for callers and reads an hour later on the scanning thread, so the scan
    /// expires every call; it keeps the expiry scan's timer callback for that thread instead of arming it.</summary>
    private sealed class ScanningClock : TimeProvider
    {
        [ThreadStatic]
        private static bool t_scanning;

        private readonly long _now = Stopwatch.GetTimestamp();

        private object? _state;

        public TimerCallback? Scan { get; private set; }

        public override long GetTimestamp() => t_scanning ? _now + (TimestampFrequency * 3600) : _now;

        public override ITimer CreateTimer(TimerCallback callback, object? state, TimeSpan dueTime, TimeSpan period)
        {
            if (state is not OutgoingCalls)
            {
                return base.CreateTimer(callback, state, dueTime, period);
            }

            _state = state;
            Scan = callback;
            return new IdleTimer();
        }

        public void ScanUntil(CancellationToken stop)
        {
            t_scanning = true;
            while (!stop.IsCancellationRequested)
            {
                Scan!(_state);
            }
        }

        private sealed class IdleTimer : ITimer
        {
            public bool Change(TimeSpan dueTime, TimeSpan period) => true;

            public void Dispose()
            {
            }

            public ValueTask DisposeAsync() => default;
        }
    }
}
