using System.Net;
using System.Net.Sockets;
using Microsoft.Extensions.Time.Testing;
using Mux.Protocol;
using Mux.Tests.Infrastructure;
using Mux.Tests.Protocol;
using static Mux.Tests.Infrastructure.RawServerFrames;

namespace Mux.Tests.Deadlines;

/// <summary>
/// A call's deadline is fixed once, when the user makes the call: waiting for a connection, for a
/// call slot, and a resend after GoAway all spend from it, the Request carries what remains of it
/// when it is written, and a call whose deadline passed while it waited is never sent. The client
/// runs on a fake clock and talks to a hand-written server, which reads the deadline header of
/// every Request.
/// </summary>
public sealed class DeadlineFixedOnceTests
{
    private static readonly TimeSpan CallTimeout = TimeSpan.FromSeconds(2);

    private const string TimedOut = "The Mux call to ITestService.Add did not complete within 2 s (MuxClientOptions.CallTimeout).";

    private const string NotSentInTime = "The Mux call to ITestService.Add did not complete within 2 s (MuxClientOptions.CallTimeout) (its time ran out while it waited to be sent; it was not sent).";

    [Fact]
    public async Task ACallMadeWhileDisconnected_ThatWaits1500MsForTheConnection_IsSentWith500MsLeft_AndTimesOut2SecondsAfterItWasMade()
    {
        var clock = new FakeTimeProvider();
        using TcpListener listener = RawMuxPeer.Listen();
        await using MuxClient client = MuxClient.Create(Options(clock, listener.LocalEndpoint));
        await using RawMuxPeer server = await RawMuxPeer.AcceptAsync(listener);
        Assert.Equal(FrameType.Hello, (await server.ExpectFrameAsync()).Type); // The handshake waits for the test.

        Task<int> call = client.CreateProxy<ITestService>().Add(1, 2).AsTask();
        clock.Advance(TimeSpan.FromMilliseconds(1500));
        Assert.False(call.IsCompleted);
        await server.SendAsync(HelloAck());

        ReceivedFrame request = await server.ExpectFrameAsync();
        Assert.Equal(1, FirstArgument(request));
        Assert.Equal(FrameFlags.Deadline, request.Flags & FrameFlags.Deadline);
        Assert.Equal(500u, request.RemainingMilliseconds);

        clock.Advance(TimeSpan.FromMilliseconds(499));
        Assert.False(call.IsCompleted);
        clock.Advance(TimeSpan.FromMilliseconds(1));
        TimeoutException timeout = await Assert.ThrowsAsync<TimeoutException>(() => call.WaitAsync(TestHost.Patience));
        Assert.Equal(TimedOut, timeout.Message);

        // The server is told to stop, once; the call was sent once.
        ReceivedFrame cancel = await server.ExpectFrameAsync();
        Assert.Equal((FrameType.Cancel, request.CallId), (cancel.Type, cancel.CallId));
    }

    [Fact]
    public async Task ACallThatWaits1500MsForACallSlot_IsSentWith500MsLeft()
    {
        var clock = new FakeTimeProvider();
        using TcpListener listener = RawMuxPeer.Listen();
        await using Connected connected = await Connected.StartAsync(listener, clock, maxConcurrentCalls: 1);
        ITestService proxy = connected.Client.CreateProxy<ITestService>();

        Task<int> first = proxy.Add(1, 0).AsTask();
        ReceivedFrame firstRequest = await connected.Server.ExpectFrameAsync();
        Assert.Equal(2000u, firstRequest.RemainingMilliseconds);
        Task<int> second = proxy.Add(2, 0).AsTask(); // The server's one slot is taken: it waits.

        clock.Advance(TimeSpan.FromMilliseconds(1500));
        Assert.False(second.IsCompleted);
        await connected.Server.SendAsync(Response(firstRequest.CallId, 10));
        Assert.Equal(10, await first.WaitAsync(TestHost.Patience));

        ReceivedFrame secondRequest = await connected.Server.ExpectFrameAsync();
        Assert.Equal(2, FirstArgument(secondRequest));
        Assert.Equal(500u, secondRequest.RemainingMilliseconds);
        await connected.Server.SendAsync(Response(secondRequest.CallId, 20));
        Assert.Equal(20, await second.WaitAsync(TestHost.Patience));
    }

    [Fact]
    public async Task ACallSentAgainAfterGoAway1500MsAfterItWasMade_IsSentWith500MsLeft()
    {
        var clock = new FakeTimeProvider();
        using TcpListener listener = RawMuxPeer.Listen();
        await using Connected connected = await Connected.StartAsync(listener, clock);
        Task<int> call = connected.Client.CreateProxy<ITestService>().Add(3, 0).AsTask();
        ReceivedFrame first = await connected.Server.ExpectFrameAsync();
        Assert.Equal(2000u, first.RemainingMilliseconds);

        clock.Advance(TimeSpan.FromMilliseconds(1500));
        await connected.Server.SendAsync(GoAway(lastServedCallId: 0)); // The server ran nothing.

        await using RawMuxPeer next = await RawMuxPeer.AcceptAsync(listener);
        await next.AnswerHelloAsync();
        ReceivedFrame again = await next.ExpectFrameAsync();
        Assert.Equal(3, FirstArgument(again));
        Assert.Equal(500u, again.RemainingMilliseconds);
        await next.SendAsync(Response(again.CallId, 30));
        Assert.Equal(30, await call.WaitAsync(TestHost.Patience));
    }

    [Fact]
    public async Task ACallWhoseDeadlinePassedWhileItWaitedForASlot_IsNeverSent_AndFailsWithTimeoutException()
    {
        // The slot wait's own timer is late (a busy machine): the slot comes free after the deadline.
        var clock = new LateTimersClock();
        using TcpListener listener = RawMuxPeer.Listen();
        await using Connected connected = await Connected.StartAsync(listener, clock, maxConcurrentCalls: 1);
        ITestService proxy = connected.Client.CreateProxy<ITestService>();
        Task<int> first = proxy.Add(1, 0).AsTask();
        ReceivedFrame firstRequest = await connected.Server.ExpectFrameAsync();
        Task<int> late = proxy.Add(2, 0).AsTask();

        clock.Skip(TimeSpan.FromMilliseconds(2500));
        await connected.Server.SendAsync(Response(firstRequest.CallId, 10));
        Assert.Equal(10, await first.WaitAsync(TestHost.Patience));

        // The slot goes to the late call first (oldest waiter), then, given back unused, to the next
        // call: the next Request the server sees is the next call's.
        Task<int> next = proxy.Add(3, 0).AsTask();
        ReceivedFrame nextRequest = await connected.Server.ExpectFrameAsync();
        Assert.Equal(3, FirstArgument(nextRequest));
        Assert.Equal(2000u, nextRequest.RemainingMilliseconds);
        TimeoutException timeout = await Assert.ThrowsAsync<TimeoutException>(() => late.WaitAsync(TestHost.Patience));
        Assert.Equal(NotSentInTime, timeout.Message);
        await connected.Server.SendAsync(Response(nextRequest.CallId, 30));
        Assert.Equal(30, await next.WaitAsync(TestHost.Patience));
    }

    [Fact]
    public async Task ACallWhoseDeadlinePassedWhileItWaitedForTheConnection_IsNeverSent_AndFailsWithTimeoutException()
    {
        // The connection comes up after the call's deadline, before the wait's own (late) timer fired.
        var clock = new LateTimersClock();
        using TcpListener listener = RawMuxPeer.Listen();
        await using MuxClient client = MuxClient.Create(Options(clock, listener.LocalEndpoint));
        ITestService proxy = client.CreateProxy<ITestService>();
        await using RawMuxPeer server = await RawMuxPeer.AcceptAsync(listener);
        Assert.Equal(FrameType.Hello, (await server.ExpectFrameAsync()).Type);
        Task<int> late = proxy.Add(1, 0).AsTask();

        clock.Skip(TimeSpan.FromMilliseconds(2500));
        await server.SendAsync(HelloAck());
        TimeoutException timeout = await Assert.ThrowsAsync<TimeoutException>(() => late.WaitAsync(TestHost.Patience));
        Assert.Equal(NotSentInTime, timeout.Message);

        Task<int> next = proxy.Add(2, 0).AsTask();
        ReceivedFrame nextRequest = await server.ExpectFrameAsync();
        Assert.Equal(2, FirstArgument(nextRequest));
        await server.SendAsync(Response(nextRequest.CallId, 20));
        Assert.Equal(20, await next.WaitAsync(TestHost.Patience));
    }

    // Keepalive off, so that the hand-written server sees only the client's calls.
    private static MuxClientOptions Options(TimeProvider clock, EndPoint endPoint) => new()
    {
        EndPoint = endPoint,
        TimeProvider = clock,
        CallTimeout = CallTimeout,
        KeepAliveInterval = Timeout.InfiniteTimeSpan,
    };

    /// <summary>A client connected to a hand-written server.</summary>
    private sealed class Connected : IAsyncDisposable
    {
        private Connected(MuxClient client, RawMuxPeer server)
        {
            Client = client;
            Server = server;
        }

        public MuxClient Client { get; }

        public RawMuxPeer Server { get; }

        public static async Task<Connected> StartAsync(TcpListener listener, TimeProvider clock, int maxConcurrentCalls = int.MaxValue)
        {
            Task<MuxClient> connecting = MuxClient.ConnectAsync(Options(clock, listener.LocalEndpoint));
            RawMuxPeer server = await RawMuxPeer.AcceptAsync(listener);
            await server.AnswerHelloAsync(maxConcurrentCalls);
            return new Connected(await connecting.WaitAsync(TestHost.Patience), server);
        }

        // The server first: the client's graceful close waits (on the fake clock, which the test
        // no longer moves) for its peer to close, as it would for a real server's.
        public async ValueTask DisposeAsync()
        {
            await Server.DisposeAsync();
            await Client.DisposeAsync().AsTask().WaitAsync(TestHost.Patience);
        }
    }
}
