using System.Net;
using System.Net.Sockets;
using Microsoft.Extensions.Time.Testing;
using Mux.Protocol;
using Mux.Tests.Infrastructure;
using Mux.Tests.Protocol;
using static Mux.Tests.Infrastructure.RawServerFrames;

namespace Mux.Tests.Pipeline;

/// <summary>
/// Fail fast or wait (issue 25): while the client has no connection, a call that does not wait for
/// one (WaitForConnection false, on the client or on a bound proxy) fails at once, safe to retry,
/// and is never sent; one that waits is sent on the next connection. The same holds for a call the
/// server refused as never run (above its GoAway): the one that does not wait fails instead of
/// being sent again. The servers are hand-written (each is one connection to the same listener), so
/// the test sees every Request; the client's clock is fake and never moves, so no timeout can
/// decide an outcome.
/// </summary>
public sealed class ConnectionWaitTests
{
    [Theory]
    [InlineData(false)]
    [InlineData(true)]
    public async Task WhileTheServerIsGone_ACallThatDoesNotWaitFailsAtOnce_SafeToRetry_AndOneThatWaitsIsSentOnTheNextConnection(bool failFastClientWide)
    {
        using TcpListener listener = RawMuxPeer.Listen();
        Task<MuxClient> connecting = MuxClient.ConnectAsync(Options(listener.LocalEndpoint, waitForConnection: !failFastClientWide));
        RawMuxPeer first = await RawMuxPeer.AcceptAsync(listener);
        await first.AnswerHelloAsync();
        await using MuxClient client = await connecting.WaitAsync(TestHost.Patience);
        (ITestService waits, ITestService failsFast) = failFastClientWide
            ? (client.CreateProxy<ITestService>(new MuxCallOptions { WaitForConnection = true }), client.CreateProxy<ITestService>())
            : (client.CreateProxy<ITestService>(), client.CreateProxy<ITestService>(new MuxCallOptions { WaitForConnection = false }));

        // The server goes away; the client reconnects at once, to a server that holds its handshake.
        await first.DisposeAsync();
        await using RawMuxPeer second = await RawMuxPeer.AcceptAsync(listener).WaitAsync(TestHost.Patience);
        Assert.Equal(FrameType.Hello, (await second.ExpectFrameAsync()).Type);
        Assert.Equal(MuxClientState.Reconnecting, client.State);

        Task<int> failed = failsFast.Add(1, 0).AsTask();
        MuxConnectionException notConnected = await Assert.ThrowsAsync<MuxConnectionException>(() => failed.WaitAsync(TestHost.Patience));
        Assert.True(notConnected.IsSafeToRetry);
        Assert.Contains("right now (it is Reconnecting), and the call to ITestService.Add does not wait for one (WaitForConnection is false); it was not sent, so it is safe to retry.", notConnected.Message, StringComparison.Ordinal);

        Task<int> waiting = waits.Add(2, 0).AsTask();
        await second.SendAsync(HelloAck());

        // The next server's first Request is the call that waited: the other one never came.
        ReceivedFrame request = await second.ExpectFrameAsync();
        Assert.Equal(2, FirstArgument(request));
        await second.SendAsync(Response(request.CallId, 22));
        Assert.Equal(22, await waiting.WaitAsync(TestHost.Patience));

        // And on a connection that is up, the fail-fast proxy's calls run as any other.
        Task<int> connected = failsFast.Add(3, 0).AsTask();
        request = await second.ExpectFrameAsync();
        Assert.Equal(3, FirstArgument(request));
        await second.SendAsync(Response(request.CallId, 33));
        Assert.Equal(33, await connected.WaitAsync(TestHost.Patience));
    }

    [Theory]
    [InlineData(false)]
    [InlineData(true)]
    public async Task ACallSentBeforeTheServerWentAway_AndRefusedAsNeverRun_FailsSafeToRetry_WhenItDoesNotWait_AndIsSentOnceMoreWhenItWaits(bool waits)
    {
        using TcpListener listener = RawMuxPeer.Listen();
        Task<MuxClient> connecting = MuxClient.ConnectAsync(Options(listener.LocalEndpoint, waitForConnection: true));
        RawMuxPeer first = await RawMuxPeer.AcceptAsync(listener);
        await first.AnswerHelloAsync();
        MuxClient client = await connecting.WaitAsync(TestHost.Patience);
        try
        {
            ITestService proxy = client.CreateProxy<ITestService>(new MuxCallOptions { WaitForConnection = waits });

            Task<int> served = proxy.Add(1, 0).AsTask();
            Task<int> notRun = proxy.Add(2, 0).AsTask();
            ReceivedFrame servedRequest = await first.ExpectFrameAsync();
            ReceivedFrame notRunRequest = await first.ExpectFrameAsync();
            Assert.Equal((1, 2), (FirstArgument(servedRequest), FirstArgument(notRunRequest)));

            // The server will serve only the first call; the client reconnects, to a server that holds
            // its handshake until the test has seen what became of the second call.
            await first.SendAsync(GoAway(servedRequest.CallId));
            await using RawMuxPeer second = await RawMuxPeer.AcceptAsync(listener).WaitAsync(TestHost.Patience);
            Assert.Equal(FrameType.Hello, (await second.ExpectFrameAsync()).Type);

            if (!waits)
            {
                MuxConnectionException refused = await Assert.ThrowsAsync<MuxConnectionException>(() => notRun.WaitAsync(TestHost.Patience));
                Assert.True(refused.IsSafeToRetry);
                Assert.Equal(MuxCloseReason.GoAway, refused.Reason);
            }
            else
            {
                Assert.False(notRun.IsCompleted);
            }

            // The probes wait for the connection (the client's default): the test cannot tell when
            // the client has read the HelloAck.
            await second.SendAsync(HelloAck());
            ITestService waiting = client.CreateProxy<ITestService>();
            Task<int> probe = waiting.Add(3, 0).AsTask();
            var onSecond = new List<int>();
            for (int i = 0; i < (waits ? 2 : 1); i++)
            {
                ReceivedFrame request = await second.ExpectFrameAsync();
                onSecond.Add(FirstArgument(request));
                await second.SendAsync(Response(request.CallId, 20 + FirstArgument(request)));
            }

            // Sent once more when it waits; never again when it does not (the probe came first: the
            // call had failed before the connection was up).
            Assert.Equal(waits ? [2, 3] : [3], onSecond.Order());
            Assert.Equal(23, await probe.WaitAsync(TestHost.Patience));

            // Nothing else came: the next Request is a new call's.
            Task<int> next = waiting.Add(4, 0).AsTask();
            ReceivedFrame nextRequest = await second.ExpectFrameAsync();
            Assert.Equal(4, FirstArgument(nextRequest));
            await second.SendAsync(Response(nextRequest.CallId, 24));
            Assert.Equal(24, await next.WaitAsync(TestHost.Patience));
            if (waits)
            {
                Assert.Equal(22, await notRun.WaitAsync(TestHost.Patience));
            }

            // The first server answers what it promised to serve.
            await first.SendAsync(Response(servedRequest.CallId, 11));
            Assert.Equal(11, await served.WaitAsync(TestHost.Patience));
        }
        finally
        {
            // The drained connection's graceful close waits, on the fake clock, for its server to
            // close: the hand-written server closes before the client is disposed, also on a failure.
            await first.DisposeAsync();
            await client.DisposeAsync();
        }
    }

    // A fake clock nobody moves: no CallTimeout, ConnectTimeout or backoff can pass. Keepalive off,
    // so that the hand-written servers see only the client's calls.
    [Fact]
    public async Task OnADisposedClient_ACallThatDoesNotWait_FailsAsClosed_NotAsSafeToRetry()
    {
        PipelineHost host = await PipelineHost.StartAsync(TransportKind.Tcp);
        await using (host)
        {
            IPipelineService failsFast = host.Client.CreateProxy<IPipelineService>(new MuxCallOptions { WaitForConnection = false });
            await host.Client.DisposeAsync();

            MuxConnectionException waited = await Assert.ThrowsAsync<MuxConnectionException>(() => host.Proxy.Add(1, 2).AsTask().WaitAsync(TestHost.Patience));
            MuxConnectionException unary = await Assert.ThrowsAsync<MuxConnectionException>(() => failsFast.Add(1, 2).AsTask().WaitAsync(TestHost.Patience));
            MuxConnectionException stream = await Assert.ThrowsAsync<MuxConnectionException>(async () =>
            {
                await foreach (int item in failsFast.Count(1).WithCancellation(new CancellationTokenSource(TestHost.Patience).Token))
                {
                }
            });

            // Before, the call that does not wait was told there was no connection "right now", safe
            // to retry: a caller that retries such calls would retry forever on a client that is gone.
            // It now fails as the call that waits does.
            Assert.Equal(MuxCloseReason.LocalShutdown, waited.Reason);
            Assert.EndsWith(" is closed.", waited.Message, StringComparison.Ordinal);
            foreach (MuxConnectionException failed in new[] { unary, stream })
            {
                Assert.False(failed.IsSafeToRetry);
                Assert.Equal(waited.Message, failed.Message);
                Assert.Equal(MuxCloseReason.LocalShutdown, failed.Reason);
            }
        }
    }

    private static MuxClientOptions Options(EndPoint endPoint, bool waitForConnection) => new()
    {
        EndPoint = endPoint,
        TimeProvider = new FakeTimeProvider(),
        CallTimeout = TimeSpan.FromSeconds(30),
        ConnectTimeout = TimeSpan.FromMinutes(5),
        KeepAliveInterval = Timeout.InfiniteTimeSpan,
        WaitForConnection = waitForConnection,
    };
}
