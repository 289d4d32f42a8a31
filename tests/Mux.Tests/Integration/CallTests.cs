using Microsoft.Extensions.Time.Testing;
using Mux.Protocol;
using Mux.Tests.Infrastructure;
using Mux.Tests.Protocol;

namespace Mux.Tests.Integration;

public sealed class CallTests
{
    [Theory]
    [InlineData(TransportKind.InMemory)]
    [InlineData(TransportKind.Tcp)]
    public async Task Call_ReturnsTheHandlersResult(TransportKind kind)
    {
        await using TestHost host = await Hosts.StartAsync(kind);

        Assert.Equal(5, await host.Proxy.Add(2, 3));
        Assert.Equal("héllo, wörld", await host.Proxy.Echo("héllo, wörld"));
        Assert.Equal(100_000, (await host.Proxy.Bytes(100_000)).Length);
    }

    [Theory]
    [InlineData(TransportKind.InMemory)]
    [InlineData(TransportKind.Tcp)]
    public async Task ConcurrentCalls_WithRandomDelays_EachGetItsOwnResult(TransportKind kind)
    {
        await using TestHost host = await Hosts.StartAsync(kind);
        var random = new Random(1234);

        // Random delays make the server answer in a different order than it was asked.
        Task<int>[] calls = Enumerable.Range(0, 1000).Select(i => host.Proxy.Delay(random.Next(0, 50), i)).ToArray();
        int[] results = await Task.WhenAll(calls).WaitAsync(TestHost.Patience);

        for (int i = 0; i < results.Length; i++)
        {
            Assert.Equal(i, results[i]);
        }

        Assert.Equal(0, host.Client.PendingCalls);
    }

    [Fact]
    public async Task FiveHundredCallers_ShareOneTcpConnection()
    {
        await using TestHost host = await TestHost.StartTcpAsync();
        int completed = 0;

        async Task CallerAsync(int caller)
        {
            for (int i = 0; i < 20; i++)
            {
                Assert.Equal(caller + i, await host.Proxy.Add(caller, i));
                Interlocked.Increment(ref completed);
            }
        }

        await Task.WhenAll(Enumerable.Range(0, 500).Select(CallerAsync)).WaitAsync(TestHost.Patience);

        Assert.Equal(500 * 20, completed);
        Assert.Equal(1, host.Server.ConnectionsAccepted);
        Assert.Equal(1, host.Server.ActiveConnections);
        MuxConnectionStatistics stats = host.Client.GetStatistics();
        Assert.True(stats.FramesSent >= 500 * 20, $"Expected at least 10000 frames sent, saw {stats.FramesSent}.");
        Assert.True(stats.FramesReceived >= 500 * 20, $"Expected at least 10000 frames received, saw {stats.FramesReceived}.");
    }

    [Theory]
    [InlineData(TransportKind.InMemory)]
    [InlineData(TransportKind.Tcp)]
    public async Task BlockedHandler_DoesNotDelayOtherCallsOnTheSameConnection(TransportKind kind)
    {
        PoolThreads.EnsureSpare(1); // The blocked handler holds a pool thread on purpose.
        await using TestHost host = await Hosts.StartAsync(kind);

        Task<int> blocked = host.Proxy.Block(42);
        await host.Service.BlockStarted.Task.WaitAsync(TestHost.Patience);

        int[] fast = await Task.WhenAll(Enumerable.Range(0, 1000).Select(i => host.Proxy.Add(i, 1).AsTask())).WaitAsync(TestHost.Patience);

        // All 1000 finished while the slow handler still held its thread.
        Assert.Equal(1, host.Service.BlockedNow);
        Assert.False(blocked.IsCompleted);
        Assert.Equal(Enumerable.Range(1, 1000), fast);

        host.Service.OpenBlockGate();
        Assert.Equal(42, await blocked.WaitAsync(TestHost.Patience));
    }

    [Fact]
    public async Task ABlockingHandler_DelaysOnlyItsOwnCall_WhenItsRequestArrivesInOneReadWithOthers()
    {
        // The reader hands every call of a read to the pool, each on its own: a handler that
        // blocks the thread running it must not hold the calls that arrived next to it (whatever
        // the reader does with a read's calls, e.g. queue them in one batch).
        PoolThreads.EnsureSpare(1); // The blocked handler holds a pool thread on purpose.
        await using TestHost host = await TestHost.StartTcpAsync();
        await using RawMuxPeer raw = await RawMuxPeer.ConnectAsync(host.Server.LocalEndPoint!);
        await raw.HandshakeAsync();

        // One write: the blocking call first, then 20 quick ones behind it.
        var frames = new List<byte>(RawMuxPeer.Request(1, "Block", ValueTuple.Create(42)));
        for (uint id = 2; id <= 21; id++)
        {
            frames.AddRange(RawMuxPeer.Request(id, "Add", ((int)id, 1)));
        }

        await raw.SendAsync([.. frames]);

        var answered = new HashSet<uint>();
        for (int i = 0; i < 20; i++)
        {
            ReceivedFrame answer = await raw.ExpectFrameAsync();
            Assert.Equal(FrameType.Response, answer.Type);
            Assert.Equal((int)answer.CallId + 1, MessagePack.MessagePackSerializer.Deserialize<int>(answer.Payload));
            Assert.True(answered.Add(answer.CallId), $"Call {answer.CallId} was answered twice.");
        }

        // Every quick call was answered, and the blocking handler holds its thread (it may have been
        // the last of the read's calls to reach a thread: the pool takes them in any order).
        Assert.Equal(Enumerable.Range(2, 20).Select(i => (uint)i), answered.Order());
        await Hosts.WaitUntilAsync(() => host.Service.BlockedNow == 1, "the blocking handler to hold its thread");

        host.Service.OpenBlockGate();
        ReceivedFrame blocked = await raw.ExpectFrameAsync();
        Assert.Equal((FrameType.Response, 1u, 42), (blocked.Type, blocked.CallId, MessagePack.MessagePackSerializer.Deserialize<int>(blocked.Payload)));
    }

    [Theory]
    [InlineData(TransportKind.InMemory)]
    [InlineData(TransportKind.Tcp)]
    public async Task Call_WhenHandlerThrows_FailsWithRemoteException_AndTheConnectionStaysUp(TransportKind kind)
    {
        await using TestHost host = await Hosts.StartAsync(kind, new MuxServerOptions { EnableDetailedErrors = true });

        MuxRemoteException error = await Assert.ThrowsAsync<MuxRemoteException>(() => host.Proxy.Throw("boom"));

        Assert.Equal("boom", error.Message);
        Assert.Equal(MuxStatusCode.HandlerFailed, error.StatusCode);
        Assert.Equal("System.InvalidOperationException", error.RemoteExceptionType);
        Assert.True(host.Client.IsConnected);
        Assert.Equal(3, await host.Proxy.Add(1, 2));
    }

    [Theory]
    [InlineData(TransportKind.InMemory)]
    [InlineData(TransportKind.Tcp)]
    public async Task Call_WithoutResponse_FailsWithTimeoutException_AfterCallTimeout(TransportKind kind)
    {
        // Hang never returns until the test ends, so the call timing out is the only way it can end,
        // and the client's deadline runs on a fake clock: nothing here depends on the machine's speed.
        var clock = new FakeTimeProvider();
        var callTimeout = TimeSpan.FromMilliseconds(200);
        await using TestHost host = await Hosts.StartAsync(kind, clientOptions: new MuxClientOptions { CallTimeout = callTimeout, TimeProvider = clock });

        Task<int> call = host.Proxy.Hang(1);

        // The request was sent and its handler runs (and still does: Hang has not returned), so only
        // the deadline can end the call, not a failed send.
        await Hosts.WaitUntilAsync(() => host.Service.HangingCalls == 1, "the call's handler to run on the server");
        clock.Advance(callTimeout - TimeSpan.FromMilliseconds(1));

        // The expiry scan runs inside Advance and takes an expired call out of the table there (its
        // task completes a moment later, on the thread pool): still in it, it has not timed out.
        Assert.True(host.Client.PendingCalls == 1, "The call timed out before its CallTimeout.");
        Assert.False(call.IsCompleted);

        clock.Advance(TimeSpan.FromMilliseconds(1));
        TimeoutException error = await Assert.ThrowsAsync<TimeoutException>(() => call).WaitAsync(TestHost.Patience);
        Assert.Equal("The Mux call to ITestService.Hang did not complete within 200 ms (MuxClientOptions.CallTimeout).", error.Message);
        Assert.Equal(0, host.Client.PendingCalls);

        // The connection still serves calls.
        Assert.Equal(3, await host.Proxy.Add(1, 2).AsTask().WaitAsync(TestHost.Patience));
    }

    [Theory]
    [InlineData(TransportKind.InMemory)]
    [InlineData(TransportKind.Tcp)]
    public async Task Cancellation_FailsTheCall_AndCancelsTheServerHandlersToken(TransportKind kind)
    {
        await using TestHost host = await Hosts.StartAsync(kind);
        using var cts = new CancellationTokenSource();

        Task call = host.Proxy.WaitForCancellation(cts.Token);
        await host.Service.WaitStarted.Task.WaitAsync(TestHost.Patience);
        cts.Cancel();

        OperationCanceledException error = await Assert.ThrowsAnyAsync<OperationCanceledException>(() => call).WaitAsync(TestHost.Patience);
        Assert.Equal(cts.Token, error.CancellationToken);
        await host.Service.CancellationObserved.Task.WaitAsync(TestHost.Patience);
        Assert.Equal(0, host.Client.PendingCalls);
        Assert.Equal(3, await host.Proxy.Add(1, 2));
    }

    [Fact]
    public async Task Call_WithAlreadyCanceledToken_FailsWithoutBeingSent()
    {
        await using TestHost host = await TestHost.StartInMemoryAsync();
        long framesBefore = host.Client.GetStatistics().FramesSent;

        await Assert.ThrowsAnyAsync<OperationCanceledException>(() => host.Proxy.WaitForCancellation(new CancellationToken(canceled: true)));

        Assert.Equal(framesBefore, host.Client.GetStatistics().FramesSent);
    }

    [Fact]
    public async Task KillingTheConnection_With500CallsInFlight_FailsEachWithAConnectionException()
    {
        // Every call hangs here, so nothing races the close; ExactlyOnceStressTests races them.
        // Without reconnecting, so that the client closes with its connection (reconnect has its own tests).
        await using TestHost host = await TestHost.StartTcpAsync(clientOptions: new MuxClientOptions { AutoReconnect = false });
        Task<int>[] calls = Enumerable.Range(0, 500).Select(host.Proxy.Hang).ToArray();
        await Hosts.WaitUntilAsync(() => host.Service.HangingCalls == 500, "all 500 calls are running on the server");

        // Stop the server without waiting for its calls: it closes the socket under them.
        await host.Server.StopAsync(new CancellationToken(canceled: true)).WaitAsync(TestHost.Patience);

        foreach (Task<int> call in calls)
        {
            await Assert.ThrowsAsync<MuxConnectionException>(() => call).WaitAsync(TestHost.Patience);
        }

        Assert.Equal(0, host.Client.PendingCalls);
        Assert.False(host.Client.IsConnected);
        await host.Client.Completion.WaitAsync(TestHost.Patience);
        await Assert.ThrowsAsync<MuxConnectionException>(() => host.Proxy.Add(1, 2).AsTask());
    }

    [Fact]
    public async Task DisposingTheClient_FailsPendingCalls_WithConnectionException()
    {
        await using TestHost host = await TestHost.StartTcpAsync();
        Task<int>[] calls = Enumerable.Range(0, 50).Select(host.Proxy.Hang).ToArray();
        await Hosts.WaitUntilAsync(() => host.Service.HangingCalls == 50, "the calls are running");

        await host.Client.DisposeAsync().AsTask().WaitAsync(TestHost.Patience);

        foreach (Task<int> call in calls)
        {
            MuxConnectionException error = await Assert.ThrowsAsync<MuxConnectionException>(() => call).WaitAsync(TestHost.Patience);
            Assert.Equal(MuxCloseReason.LocalShutdown, error.Reason);
        }
    }

    [Fact]
    public async Task StoppingTheServer_LetsCallsInFlightFinish()
    {
        // Without reconnecting, so that the client closes with its connection (reconnect has its own tests).
        await using TestHost host = await TestHost.StartTcpAsync(clientOptions: new MuxClientOptions { AutoReconnect = false });
        Task<int> inFlight = host.Proxy.Hang(7);
        await Hosts.WaitUntilAsync(() => host.Service.HangingCalls == 1, "the call is running on the server");

        Task stop = host.Server.StopAsync(new CancellationTokenSource(TestHost.Patience).Token);

        // Once the client has seen GoAway (new calls are refused), the call in flight is still
        // running: the server waits for it, and its result (not a connection error) reaches the caller.
        MuxConnectionException refused = await RefusedSoonAsync(host);
        Assert.Equal(MuxCloseReason.GoAway, refused.Reason);
        Assert.False(inFlight.IsCompleted, "The call in flight ended when the server said GoAway.");
        host.Service.ReleaseHangingCalls();

        Assert.Equal(7, await inFlight.WaitAsync(TestHost.Patience));
        await stop.WaitAsync(TestHost.Patience);
        await host.Client.Completion.WaitAsync(TestHost.Patience);
        await Assert.ThrowsAsync<MuxConnectionException>(() => host.Proxy.Add(1, 2).AsTask());
    }

    [Fact]
    public async Task StoppingTheServer_DeliversTheResponseOfEveryDrainedCall()
    {
        // Many calls finishing at once queue their responses behind each other; the drain must
        // send every one of them before it closes the connection.
        await using TestHost host = await TestHost.StartTcpAsync();
        Task<int>[] inFlight = Enumerable.Range(0, 50).Select(host.Proxy.Hang).ToArray();
        await Hosts.WaitUntilAsync(() => host.Service.HangingCalls == 50, "every call is running on the server");

        Task stop = host.Server.StopAsync(new CancellationTokenSource(TestHost.Patience).Token);
        host.Service.ReleaseHangingCalls();

        int[] results = await Task.WhenAll(inFlight).WaitAsync(TestHost.Patience);
        Assert.Equal(Enumerable.Range(0, 50), results);
        await stop.WaitAsync(TestHost.Patience);
    }

    [Fact]
    public async Task Connect_ToAPortWithNoServer_FailsWithConnectionException()
    {
        using var listener = new System.Net.Sockets.Socket(System.Net.Sockets.SocketType.Stream, System.Net.Sockets.ProtocolType.Tcp);
        listener.Bind(new System.Net.IPEndPoint(System.Net.IPAddress.Loopback, 0));
        var endPoint = listener.LocalEndPoint!;
        listener.Dispose(); // The port is now (almost certainly) closed.

        MuxConnectionException error = await Assert.ThrowsAsync<MuxConnectionException>(() => MuxClient.ConnectAsync(endPoint));

        Assert.Contains(endPoint.ToString()!, error.Message);
        Assert.IsType<System.Net.Sockets.SocketException>(error.InnerException);
    }

    /// <summary>Makes new calls until one is refused (a call sent before the server's GoAway arrived still succeeds).</summary>
    private static async Task<MuxConnectionException> RefusedSoonAsync(TestHost host)
    {
        DateTime deadline = DateTime.UtcNow + TestHost.Patience;
        while (true)
        {
            try
            {
                await host.Proxy.Add(1, 1).AsTask().WaitAsync(TestHost.Patience);
            }
            catch (MuxConnectionException refused)
            {
                return refused;
            }

            Assert.True(DateTime.UtcNow < deadline, "New calls were still accepted long after StopAsync.");
            await Task.Delay(5);
        }
    }
}
