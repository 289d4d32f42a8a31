using Mux.Protocol;
using Mux.Tests.Protocol;
using Mux.Tests.Infrastructure;
using static Mux.Tests.Protocol.ProtocolTestHelpers;

namespace Mux.Tests.Connection;

/// <summary>The server's MaxConcurrentCallsPerConnection, advertised in its HelloAck, is honoured by
/// the client: calls beyond it wait on the client (cancellably, within their timeout), so the server
/// never stops reading and always sees Cancel, Ping, GoAway and FIN.</summary>
public class ConcurrencyLimitTests
{
    private static readonly MuxServerOptions CapOfFour = new() { MaxConcurrentCallsPerConnection = 4 };

    [Fact]
    public async Task FifthCallAtACapOfFour_WaitsOnTheClient_AndRunsWhenOneHandlerIsCancelled()
    {
        await using TestHost host = await TestHost.StartTcpAsync(CapOfFour);
        CancellationTokenSource[] callers = [.. Enumerable.Range(0, 4).Select(_ => new CancellationTokenSource())];
        Task[] neverReturning = [.. callers.Select(c => host.Proxy.WaitForCancellation(c.Token))];
        await Hosts.WaitUntilAsync(() => host.Service.WaitingForCancellationNow == 4, "four handlers to run");

        Task<int> fifth = host.Proxy.Add(20, 22).AsTask();
        Assert.False(fifth.IsCompleted);
        Assert.Equal(4, host.Client.Connection.PendingCallCount); // The fifth was not sent.

        await callers[0].CancelAsync();
        await Assert.ThrowsAnyAsync<OperationCanceledException>(() => neverReturning[0].WaitAsync(TestHost.Patience));
        Assert.Equal(42, await fifth.WaitAsync(TestHost.Patience));
        Assert.True(host.Client.IsConnected);

        foreach (CancellationTokenSource caller in callers)
        {
            await caller.CancelAsync();
        }

        await Assert.ThrowsAnyAsync<OperationCanceledException>(() => Task.WhenAll(neverReturning).WaitAsync(TestHost.Patience));
    }

    [Fact]
    public async Task AClientThatLeavesWhileFourHandlersHangAtACapOfFour_IsNoticedByTheServer()
    {
        // The connection's own close, so no reconnect.
        await using TestHost host = await TestHost.StartTcpAsync(CapOfFour, new MuxClientOptions { AutoReconnect = false });
        Task[] neverReturning = [.. Enumerable.Range(0, 4).Select(_ => host.Proxy.WaitForCancellation())];
        await Hosts.WaitUntilAsync(() => host.Service.WaitingForCancellationNow == 4, "four handlers to run");
        Task<int> fifth = host.Proxy.Add(20, 22).AsTask(); // Waits on the client for a slot.

        await host.Client.DisposeAsync().AsTask().WaitAsync(TestHost.Patience);

        // A server at its cap keeps reading, so it sees the client's FIN: it cancels the four
        // handlers and lets the connection go, instead of holding them while IsConnected stays true.
        await Hosts.WaitUntilAsync(() => host.Service.WaitingForCancellationNow == 0, "the server to cancel the four handlers");
        await Hosts.WaitUntilAsync(() => host.Server.ActiveConnections == 0, "the server to drop the connection");
        // The fifth call was never sent, but its client is closed for good: it fails as closed, not
        // as safe to retry (a caller retrying on that would retry on a client that sends nothing again).
        MuxConnectionException never = await Assert.ThrowsAsync<MuxConnectionException>(() => fifth).WaitAsync(TestHost.Patience);
        Assert.False(never.IsSafeToRetry, never.Message);
        Assert.EndsWith(" is closed.", never.Message, StringComparison.Ordinal);
        foreach (Task call in neverReturning)
        {
            await Assert.ThrowsAsync<MuxConnectionException>(() => call).WaitAsync(TestHost.Patience);
        }
    }

    [Fact]
    public async Task ACallWaitingForASlot_FailsAtOnceWhenCancelled_AndLeaksNoSlot()
    {
        await using TestHost host = await TestHost.StartTcpAsync(new MuxServerOptions { MaxConcurrentCallsPerConnection = 1 });
        using var first = new CancellationTokenSource();
        Task running = host.Proxy.WaitForCancellation(first.Token);
        await Hosts.WaitUntilAsync(() => host.Service.WaitingForCancellationNow == 1, "the handler to run");

        using var second = new CancellationTokenSource();
        Task waiting = host.Proxy.WaitForCancellation(second.Token);
        Assert.Equal(1, host.Client.Connection.PendingCallCount);
        await second.CancelAsync();
        await Assert.ThrowsAnyAsync<OperationCanceledException>(() => waiting.WaitAsync(TestHost.Patience));
        Assert.False(running.IsCompleted);

        await first.CancelAsync();
        await Assert.ThrowsAnyAsync<OperationCanceledException>(() => running.WaitAsync(TestHost.Patience));
        Assert.Equal(3, await host.Proxy.Add(1, 2).AsTask().WaitAsync(TestHost.Patience));
    }

    [Fact]
    public async Task ACallWaitingForASlot_TimesOutWithinItsCallTimeout_WhileAnAbandonedCallStillHoldsTheSlot()
    {
        await using TestHost host = await TestHost.StartTcpAsync(
            new MuxServerOptions { MaxConcurrentCallsPerConnection = 1 },
            new MuxClientOptions { CallTimeout = TimeSpan.FromMilliseconds(300) });
        Task<int> hanging = host.Proxy.Hang(1); // Ignores cancellation: runs on after the client gives up.
        await Hosts.WaitUntilAsync(() => host.Service.HangingCalls == 1, "the handler to run");
        Task<int> waiting = host.Proxy.Add(1, 1).AsTask();

        await Assert.ThrowsAsync<TimeoutException>(() => hanging.WaitAsync(TestHost.Patience));
        // The server still runs the abandoned call, so the slot stays taken: the waiting call is
        // not sent (it would be refused), it times out on the client.
        TimeoutException timedOut = await Assert.ThrowsAsync<TimeoutException>(() => waiting.WaitAsync(TestHost.Patience));
        Assert.Contains("ITestService.Add", timedOut.Message, StringComparison.Ordinal);
        Assert.Contains("MaxConcurrentCallsPerConnection", timedOut.Message, StringComparison.Ordinal);

        // The abandoned call's answer frees the slot. (A call the short timeout cuts on a slow
        // machine is made again; a slot that stayed taken fails every one, and the test after Patience.)
        host.Service.ReleaseHangingCalls();
        Assert.Equal(3, await Hosts.AnswerDespiteAShortCallTimeoutAsync(() => host.Proxy.Add(1, 2).AsTask()));
    }

    [Fact]
    public async Task RawClientBeyondTheAdvertisedCap_IsRefusedWithAnError_AndTheServerKeepsReading()
    {
        await using TestHost host = await TestHost.StartTcpAsync(CapOfFour);
        int hostClients = host.Server.ActiveConnections; // The host's own MuxClient.
        RawMuxPeer raw = await RawMuxPeer.ConnectAsync(host.Server.LocalEndPoint!);
        HandshakeSettings settings = await raw.HandshakeAsync();
        Assert.Equal(4, settings.MaxConcurrentCalls);

        for (uint id = 1; id <= 5; id++)
        {
            await raw.SendAsync(RawMuxPeer.Request(id, "Hang", ValueTuple.Create((int)id)));
        }

        ReceivedFrame refused = (await raw.ReceiveFrameAsync())!;
        Assert.Equal(FrameType.Error, refused.Type);
        Assert.Equal(5u, refused.CallId);
        ErrorBody error = ErrorBody.Read(refused.Payload);
        Assert.Equal(MuxStatusCode.TooManyCalls, error.Code);
        Assert.Contains("MaxConcurrentCallsPerConnection", error.Message, StringComparison.Ordinal);
        // The refusal comes from the reader loop; the four admitted handlers start on the thread
        // pool, possibly after it (seen on a loaded machine): wait for them rather than assume them.
        await Hosts.WaitUntilAsync(() => host.Service.HangingCalls == 4, "the four admitted calls to run");

        // Still reading with every slot taken: a Ping is answered.
        byte[] ping = [1, 2, 3, 4, 5, 6, 7, 8];
        await raw.SendAsync(WriteRawFrame(FrameType.Ping, 0, ping));
        ReceivedFrame pong = (await raw.ReceiveFrameAsync())!;
        Assert.Equal(FrameType.Pong, pong.Type);
        Assert.Equal(ping, pong.Payload);

        // And a client that leaves is noticed at once, not when a handler returns.
        await raw.DisposeAsync();
        await Hosts.WaitUntilAsync(() => host.Server.ActiveConnections == hostClients, "the server to notice the client left");
        Assert.Equal(4, host.Service.HangingCalls);
        host.Service.ReleaseHangingCalls();
    }
}
