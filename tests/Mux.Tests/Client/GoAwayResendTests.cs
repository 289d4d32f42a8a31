using System.Net;
using System.Net.Sockets;
using Microsoft.Extensions.Time.Testing;
using Mux.Protocol;
using Mux.Tests.Infrastructure;
using Mux.Tests.Protocol;
using static Mux.Tests.Infrastructure.RawServerFrames;

namespace Mux.Tests.Client;

/// <summary>
/// A server's GoAway(k) with calls in flight on both sides of k, for a client that reconnects:
/// the calls up to k get their answers from that server, each call above k is sent once more, on
/// the next connection, and a call whose deadline passes while it waits for that connection is
/// never sent again. Both servers are hand-written (each is one connection to the same listener),
/// so the test counts every Request each of them receives; the client's clock is fake and never
/// moves unless the test moves it.
/// </summary>
public sealed class GoAwayResendTests
{
    [Fact]
    public async Task GoAway_WithCallsInFlightAboveAndBelowIt_AnswersThoseUpToIt_AndSendsEachAboveItExactlyOnceMoreOnTheNextConnection()
    {
        const int Calls = 10;
        const int Served = 6;
        using TcpListener listener = RawMuxPeer.Listen();
        Task<MuxClient> connecting = MuxClient.ConnectAsync(Options(new FakeTimeProvider(), listener.LocalEndpoint));
        await using RawMuxPeer first = await RawMuxPeer.AcceptAsync(listener);
        await first.AnswerHelloAsync();
        await using MuxClient client = await connecting.WaitAsync(TestHost.Patience);
        ITestService proxy = client.CreateProxy<ITestService>();

        Task<int>[] calls = Enumerable.Range(0, Calls).Select(i => proxy.Add(i, 0).AsTask()).ToArray();
        Dictionary<int, uint> onFirst = await ReceiveRequestsAsync(first, Calls);
        uint[] ids = [.. onFirst.Values.Order()];
        uint lastServed = ids[Served - 1];
        await first.SendAsync(GoAway(lastServed));

        await using RawMuxPeer second = await RawMuxPeer.AcceptAsync(listener);
        await second.AnswerHelloAsync();
        Dictionary<int, uint> onSecond = await ReceiveRequestsAsync(second, Calls - Served);
        Assert.Equal(onFirst.Where(call => call.Value > lastServed).Select(call => call.Key).Order(), onSecond.Keys.Order());

        // Nothing else was sent again: the next Request the second server sees is a new call's.
        Task<int> probe = proxy.Add(Calls, 0).AsTask();
        ReceivedFrame probeRequest = await second.ExpectFrameAsync();
        Assert.Equal(Calls, FirstArgument(probeRequest));
        await second.SendAsync(Response(probeRequest.CallId, 1));
        Assert.Equal(1, await probe.WaitAsync(TestHost.Patience));

        // Each server answers what it runs, with a value that says which server it was.
        foreach ((int call, uint id) in onFirst.Where(call => call.Value <= lastServed))
        {
            await first.SendAsync(Response(id, 100 + call));
        }

        foreach ((int call, uint id) in onSecond)
        {
            await second.SendAsync(Response(id, 200 + call));
        }

        for (int call = 0; call < Calls; call++)
        {
            int expected = onFirst[call] <= lastServed ? 100 + call : 200 + call;
            Assert.Equal(expected, await calls[call].WaitAsync(TestHost.Patience));
        }

        // Nor again to the first server: its connection, drained, ends without another Request.
        while (await first.ReceiveFrameAsync() is { } frame)
        {
            Assert.NotEqual(FrameType.Request, frame.Type);
        }

        Assert.Equal(0, client.PendingCalls);

        // The drained connection's graceful close waits, on the fake clock, for its server to
        // close too: a hand-written server only does when the test closes it.
        await first.DisposeAsync();
    }

    [Fact]
    public async Task GoAway_ACallAboveItWhoseDeadlinePassesWhileItWaitsForTheNextConnection_IsNeverSentAgain()
    {
        var clock = new FakeTimeProvider();
        using TcpListener listener = RawMuxPeer.Listen();
        Task<MuxClient> connecting = MuxClient.ConnectAsync(Options(clock, listener.LocalEndpoint));
        await using RawMuxPeer first = await RawMuxPeer.AcceptAsync(listener);
        await first.AnswerHelloAsync();
        await using MuxClient client = await connecting.WaitAsync(TestHost.Patience);
        ITestService proxy = client.CreateProxy<ITestService>();

        Task<int> served = proxy.Add(1, 0).AsTask();
        Task<int> notServed = proxy.Add(2, 0).AsTask();
        Dictionary<int, uint> onFirst = await ReceiveRequestsAsync(first, 2);
        Assert.True(onFirst[1] < onFirst[2], "The calls were numbered in the order they were made.");
        await first.SendAsync(GoAway(onFirst[1]));

        // The next server accepts the connection but holds its handshake past the call's deadline.
        await using RawMuxPeer second = await RawMuxPeer.AcceptAsync(listener);
        Assert.Equal(FrameType.Hello, (await second.ExpectFrameAsync()).Type);
        await first.SendAsync(Response(onFirst[1], 11));
        Assert.Equal(11, await served.WaitAsync(TestHost.Patience));

        clock.Advance(TimeSpan.FromSeconds(30));
        MuxConnectionException failed = await Assert.ThrowsAsync<MuxConnectionException>(() => notServed.WaitAsync(TestHost.Patience));
        Assert.True(failed.IsSafeToRetry);
        Assert.Contains("was available within 30 s (MuxClientOptions.CallTimeout); the call was not sent.", failed.Message, StringComparison.Ordinal);

        // Once connected, the next server sees a new call first: the one whose time ran out never came.
        await second.SendAsync(HelloAck());
        Task<int> next = proxy.Add(3, 0).AsTask();
        ReceivedFrame request = await second.ExpectFrameAsync();
        Assert.Equal(3, FirstArgument(request));
        await second.SendAsync(Response(request.CallId, 33));
        Assert.Equal(33, await next.WaitAsync(TestHost.Patience));

        // As above: the drained connection's close waits for its hand-written server to close.
        await first.DisposeAsync();
    }

    /// <summary>Receives <paramref name="count"/> Requests; fails the test if a call comes twice.</summary>
    private static async Task<Dictionary<int, uint>> ReceiveRequestsAsync(RawMuxPeer server, int count)
    {
        var requests = new Dictionary<int, uint>();
        for (int i = 0; i < count; i++)
        {
            ReceivedFrame request = await server.ExpectFrameAsync();
            int call = FirstArgument(request);
            Assert.True(requests.TryAdd(call, request.CallId), $"Call {call} was sent twice on one connection.");
        }

        return requests;
    }

    // A CallTimeout longer than the test's patience: only the fake clock can make it pass. Keepalive
    // off, so that the hand-written servers see only the client's calls.
    private static MuxClientOptions Options(TimeProvider clock, EndPoint endPoint) => new()
    {
        EndPoint = endPoint,
        TimeProvider = clock,
        CallTimeout = TimeSpan.FromSeconds(30),
        KeepAliveInterval = Timeout.InfiniteTimeSpan,

        // The handshake's wait is on the same clock: longer than the call's, so that a server that
        // holds its handshake outlasts the call, not the connection attempt.
        ConnectTimeout = TimeSpan.FromMinutes(5),
    };
}
