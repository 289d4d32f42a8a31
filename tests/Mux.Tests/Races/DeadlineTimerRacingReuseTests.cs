using System.Net;
using System.Reflection;
using Microsoft.Extensions.Time.Testing;
using Mux.Connection;
using Mux.Protocol;
using Mux.Server;
using Mux.Tests.Deadlines;
using Mux.Tests.Infrastructure;
using Mux.Tests.Protocol;
using Mux.Tests.Server;

namespace Mux.Tests.Races;

/// <summary>
/// A pooled call object has one deadline timer for all the calls it serves. A callback of that
/// timer that comes early (a timer's granularity is coarser than the clock's) re-arms it for what
/// is left of the call it read; if, between its read and its re-arm, that call finished and the
/// object started a next call that armed the timer for its own, shorter deadline, the re-arm
/// replaced that arm: the next call's token fired only at the earlier call's deadline (up to the
/// 49 days the header allows), and its handler ran on past its own until something else stopped it
/// (a Mux caller's Cancel, once its own expiry scan fails the call). The callback can never fire
/// another call's token (it cancels only the source and deadline it read between two reads of the
/// generation, and sources are never reused), only delay it.
/// </summary>
public sealed class DeadlineTimerRacingReuseTests
{
    private static readonly uint s_waitForCancel = MuxMethodId.Compute("Mux.Tests.Server.IKeptTokenService.WaitForCancel");

    [Fact]
    public async Task AnEarlyCallbackRearmingForAFinishedCall_DoesNotPutOffTheNextCallsDeadline()
    {
        var clock = new StallingClock();
        var service = new KeptTokenService();
        var server = new MuxServer(new MuxServerOptions { EndPoint = new IPEndPoint(IPAddress.Loopback, 0), TimeProvider = clock, KeepAliveInterval = Timeout.InfiniteTimeSpan });
        server.AddService<IKeptTokenService>(service);
        await server.StartAsync().WaitAsync(TestHost.Patience);
        RawMuxPeer peer = await RawMuxPeer.ConnectAsync(server.LocalEndPoint!);
        try
        {
            await peer.HandshakeAsync();
            ServerConnection connection = server.Connections.Single();

            // Call 1 has ten minutes; its handler takes its token, which arms the object's timer.
            await peer.SendAsync(DeadlineTests.WriteRequest(1, s_waitForCancel, remainingMilliseconds: 600_000));
            await Hosts.WaitUntilAsync(() => service.Waiting == 1, "call 1's handler to wait on its token");
            (TimerCallback callback, object? callObject) = Assert.Single(clock.DeadlineTimers);

            // The timer fires early for call 1, on a thread that stops right after it has read the
            // call (at its clock reading), as a preempted timer thread would.
            var early = new Thread(() => callback(callObject)) { IsBackground = true, Name = "early deadline callback" };
            clock.StallOnce(early);
            early.Start();
            Assert.True(clock.Stalled.Wait(TestHost.Patience), "The early callback never read the clock.");

            // Meanwhile call 1 ends (its caller cancels it), its object goes back to the pool, and
            // call 2, with one second, takes it and arms the same timer for that second.
            await peer.SendAsync(ProtocolTestHelpers.WriteRawFrame(FrameType.Cancel, 1, []));
            ReceivedFrame first = await peer.ExpectFrameAsync();
            Assert.Equal((FrameType.Error, 1u), (first.Type, first.CallId));
            await Hosts.WaitUntilAsync(() => ReferenceEquals(PooledTop(connection.Incoming), callObject), "call 1's object to be back in the pool");
            await peer.SendAsync(DeadlineTests.WriteRequest(2, s_waitForCancel, remainingMilliseconds: 1_000));
            await Hosts.WaitUntilAsync(() => service.Waiting == 1, "call 2's handler to wait on its token");
            Assert.Single(clock.DeadlineTimers); // Call 2 armed call 1's timer: the same object serves it.

            // The early callback goes on.
            clock.Release.Set();
            Assert.True(early.Join(TestHost.Patience), "The early callback did not return.");

            // Call 2's second passes: its token fires, and it is answered DeadlineExceeded.
            clock.Timers.Advance(TimeSpan.FromSeconds(1));
            await Hosts.WaitUntilAsync(() => service.Cancelled == 2, "call 2's handler to see its token fire at its deadline");
            ReceivedFrame second = await peer.ExpectFrameAsync();
            Assert.Equal((FrameType.Error, 2u), (second.Type, second.CallId));
            Assert.Equal(MuxStatusCode.DeadlineExceeded, ErrorBody.Read(second.Payload).Code);
        }
        finally
        {
            // The server's clock is fake: its ShutdownTimeout would never pass, so the stop gets a real one.
            clock.Release.Set();
            await peer.DisposeAsync();
            using var stop = new CancellationTokenSource(TestHost.Patience);
            await server.StopAsync(stop.Token).WaitAsync(TestHost.Patience + TestHost.Patience);
        }
    }

    /// <summary>The call object the connection would reuse next.</summary>
    private static object? PooledTop(IncomingCalls calls)
    {
        object pool = typeof(IncomingCalls).GetField("_pool", BindingFlags.NonPublic | BindingFlags.Instance)!.GetValue(calls)!;
        return typeof(IncomingCallPool).GetField("_top", BindingFlags.NonPublic | BindingFlags.Instance)!.GetValue(pool);
    }

    /// <summary>A fake clock (timers fire when the test advances it) that records the call objects'
    /// deadline timers, and can stop one thread at its next reading until the test lets it go.</summary>
    private sealed class StallingClock : TimeProvider
    {
        private readonly Lock _lock = new();
        private readonly List<(TimerCallback, object?)> _deadlineTimers = [];
        private Thread? _stallThread;

        public FakeTimeProvider Timers { get; } = new();

        /// <summary>Set when the thread given to <see cref="StallOnce"/> reads the clock.</summary>
        public ManualResetEventSlim Stalled { get; } = new();

        /// <summary>Lets that thread go on.</summary>
        public ManualResetEventSlim Release { get; } = new();

        public IReadOnlyList<(TimerCallback Callback, object? State)> DeadlineTimers
        {
            get
            {
                lock (_lock)
                {
                    return [.. _deadlineTimers];
                }
            }
        }

        public void StallOnce(Thread thread) => Volatile.Write(ref _stallThread, thread);

        public override long TimestampFrequency => Timers.TimestampFrequency;

        public override long GetTimestamp()
        {
            Thread? stall = Volatile.Read(ref _stallThread);
            if (stall is not null && ReferenceEquals(stall, Thread.CurrentThread) && ReferenceEquals(Interlocked.CompareExchange(ref _stallThread, null, stall), stall))
            {
                Stalled.Set();
                Release.Wait(TestHost.Patience);
            }

            return Timers.GetTimestamp();
        }

        public override DateTimeOffset GetUtcNow() => Timers.GetUtcNow();

        public override TimeZoneInfo LocalTimeZone => Timers.LocalTimeZone;

        public override ITimer CreateTimer(TimerCallback callback, object? state, TimeSpan dueTime, TimeSpan period)
        {
            if (state is IncomingCall)
            {
                lock (_lock)
                {
                    _deadlineTimers.Add((callback, state));
                }
            }

            return Timers.CreateTimer(callback, state, dueTime, period);
        }
    }
}
