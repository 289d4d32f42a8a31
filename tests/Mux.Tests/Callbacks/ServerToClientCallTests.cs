using Mux.Tests.Infrastructure;

namespace Mux.Tests.Callbacks;

/// <summary>Calls a server starts to the client that called it, on the same connection
/// (MuxCallContext.Client, MuxClient.AddService).</summary>
public class ServerToClientCallTests
{
    [Theory]
    [InlineData(TransportKind.InMemory)]
    [InlineData(TransportKind.Tcp)]
    public async Task HandlersOf100Clients_EachCallTheirOwnClientBack_AndEveryClientGetsTheSumOfItsOwnAnswers(TransportKind kind)
    {
        const int Clients = 100;
        const int CallsBack = 10;
        await using CallbackHost host = await CallbackHost.StartAsync(kind);
        var sides = new ClientSide[Clients];
        var proxies = new ICallbackHub[Clients];
        for (int i = 0; i < Clients; i++)
        {
            sides[i] = new ClientSide(i);
            proxies[i] = (await host.ConnectAsync(sides[i])).CreateProxy<ICallbackHub>();
        }

        // Every client's call waits on the server for ten answers from that same client.
        Task<int>[] sums = new Task<int>[Clients];
        for (int i = 0; i < Clients; i++)
        {
            sums[i] = proxies[i].SumOfClientAnswers(CallsBack);
        }

        int[] results = await Task.WhenAll(sums).WaitAsync(TestHost.Patience);

        const int SumOfValues = CallsBack * (CallsBack + 1) / 2;
        for (int i = 0; i < Clients; i++)
        {
            Assert.Equal(SumOfValues * 1000 + CallsBack * i, results[i]);
            Assert.Equal(CallsBack, sides[i].TransformCalls);
        }
    }

    [Fact]
    public async Task ACallToTheClient_ThatOutlastsClientCallTimeout_FailsWithTimeoutException_AndTheClientHandlersTokenFires()
    {
        await using CallbackHost host = await CallbackHost.StartAsync(TransportKind.InMemory, new MuxServerOptions { ClientCallTimeout = TimeSpan.FromMilliseconds(200) });
        var side = new ClientSide(1);
        (_, MuxRemoteClient remote) = await host.ConnectAndRegisterAsync(side);

        Task<string> call = remote.CreateProxy<IClientSide>().Slow("t", CancellationToken.None);

        var error = await Assert.ThrowsAsync<TimeoutException>(() => call.WaitAsync(TestHost.Patience));
        Assert.Equal("The Mux call to the client's IClientSide.Slow did not complete within 200 ms (MuxServerOptions.ClientCallTimeout).", error.Message);
        Assert.Equal("t", await side.SlowCanceled.Task.WaitAsync(TestHost.Patience));
        Assert.True(remote.IsConnected);
    }

    [Fact]
    public async Task ACallToTheClient_CanceledByTheServersCaller_FailsWithOperationCanceled_AndTheClientHandlersTokenFires()
    {
        await using CallbackHost host = await CallbackHost.StartAsync(TransportKind.InMemory);
        var side = new ClientSide(1);
        (MuxClient client, MuxRemoteClient remote) = await host.ConnectAndRegisterAsync(side);
        using var cancel = new CancellationTokenSource();

        Task<string> call = remote.CreateProxy<IClientSide>().Slow("c", cancel.Token);
        await side.SlowStarted.Task.WaitAsync(TestHost.Patience);
        cancel.Cancel();
        await Assert.ThrowsAnyAsync<OperationCanceledException>(() => call.WaitAsync(TestHost.Patience));
        Assert.Equal("c", await side.SlowCanceled.Task.WaitAsync(TestHost.Patience));

        // The connection goes on, both ways.
        Assert.Equal("fast x from 1", await remote.CreateProxy<IClientSide>().Fast("x").AsTask().WaitAsync(TestHost.Patience));
        Assert.Equal(1000 + 1, await client.CreateProxy<ICallbackHub>().SumOfClientAnswers(1).WaitAsync(TestHost.Patience));
    }

    [Fact]
    public async Task ACallToAServiceTheClientDidNotAdd_FailsWithUnknownMethod_NamingTheServiceAndHowToAddIt()
    {
        await using CallbackHost host = await CallbackHost.StartAsync(TransportKind.InMemory);
        (_, MuxRemoteClient remote) = await host.ConnectAndRegisterAsync(side: null);

        var error = await Assert.ThrowsAsync<MuxRemoteException>(() => remote.CreateProxy<IClientSide>().Fast("x").AsTask().WaitAsync(TestHost.Patience));

        Assert.Equal(MuxStatusCode.UnknownMethod, error.StatusCode);
        Assert.Contains("IClientSide.Fast", error.Message, StringComparison.Ordinal);
        Assert.Contains("MuxClient.AddService<IClientSide>", error.Message, StringComparison.Ordinal);
        Assert.True(remote.IsConnected);
    }

    [Fact]
    public async Task AClientHandlerThatThrows_FailsTheServersCallWithHandlerFailed_WithoutTheClientsExceptionMessage()
    {
        await using CallbackHost host = await CallbackHost.StartAsync(TransportKind.InMemory);
        (_, MuxRemoteClient remote) = await host.ConnectAndRegisterAsync(new ClientSide(1));

        var error = await Assert.ThrowsAsync<MuxRemoteException>(() => remote.CreateProxy<IClientSide>().Fail().WaitAsync(TestHost.Patience));

        Assert.Equal(MuxStatusCode.HandlerFailed, error.StatusCode);
        Assert.Contains("IClientSide.Fail failed on the client", error.Message, StringComparison.Ordinal);
        Assert.DoesNotContain("secret", error.Message, StringComparison.Ordinal);
    }

    [Theory]
    [InlineData(TransportKind.InMemory)]
    [InlineData(TransportKind.Tcp)]
    public async Task ACallToTheClient_PendingWhenTheConnectionIsLost_FailsWithMuxConnectionException_AndTheClientHandlersTokenFires(TransportKind kind)
    {
        await using CallbackHost host = await CallbackHost.StartAsync(kind);
        var side = new ClientSide(1);
        (MuxClient client, MuxRemoteClient remote) = await host.ConnectAndRegisterAsync(side, new MuxClientOptions { AutoReconnect = false });
        Task<string> call = remote.CreateProxy<IClientSide>().Slow("lost", CancellationToken.None);
        await side.SlowStarted.Task.WaitAsync(TestHost.Patience);

        await client.DisposeAsync();

        await Assert.ThrowsAsync<MuxConnectionException>(() => call.WaitAsync(TestHost.Patience));
        Assert.Equal("lost", await side.SlowCanceled.Task.WaitAsync(TestHost.Patience));
        await remote.Completion.WaitAsync(TestHost.Patience);
        Assert.False(remote.IsConnected);

        // A call made afterwards fails at once, and says it was never sent.
        var late = await Assert.ThrowsAsync<MuxConnectionException>(() => remote.CreateProxy<IClientSide>().Fast("late").AsTask().WaitAsync(TestHost.Patience));
        Assert.True(late.IsSafeToRetry);
    }

    [Fact]
    public async Task ASlowClientHandler_DelaysNeitherOtherCallsToTheClientNorTheClientsCallsToTheServer()
    {
        await using CallbackHost host = await CallbackHost.StartAsync(TransportKind.InMemory);
        var side = new ClientSide(7);
        (MuxClient client, MuxRemoteClient remote) = await host.ConnectAndRegisterAsync(side);
        IClientSide proxy = remote.CreateProxy<IClientSide>();
        Task<string> slow = proxy.Slow("held", CancellationToken.None);
        await side.SlowStarted.Task.WaitAsync(TestHost.Patience);

        var fast = new Task<string>[50];
        for (int i = 0; i < fast.Length; i++)
        {
            fast[i] = proxy.Fast(i.ToString(System.Globalization.CultureInfo.InvariantCulture)).AsTask();
        }

        string[] answers = await Task.WhenAll(fast).WaitAsync(TestHost.Patience);
        Assert.Equal(fast.Length, answers.Distinct().Count());
        Assert.Equal("fast 49 from 7", answers[49]);
        Assert.Equal(2000 + 7 + 1000 + 7, await client.CreateProxy<ICallbackHub>().SumOfClientAnswers(2).WaitAsync(TestHost.Patience));
        Assert.False(slow.IsCompleted);

        side.ReleaseSlowCalls();
        Assert.Equal("slow held", await slow.WaitAsync(TestHost.Patience));
    }

    [Fact]
    public async Task AServiceAddedToAReconnectingClient_IsServedOnItsNextConnectionToo()
    {
        await using CallbackHost host = await CallbackHost.StartAsync(TransportKind.Tcp);
        var side = new ClientSide(3);
        MuxClient client = await host.ConnectAsync(side, new MuxClientOptions { EndPoint = host.Server.LocalEndPoint });
        ICallbackHub hub = client.CreateProxy<ICallbackHub>();
        Assert.Equal(1003, await hub.SumOfClientAnswers(1).WaitAsync(TestHost.Patience));

        foreach (var connection in host.Server.Connections)
        {
            connection.Close(MuxCloseReason.LocalShutdown, null);
        }

        // The client reconnects on its own; the first calls may fail with the old connection.
        await Hosts.WaitUntilAsync(() => host.Server.ConnectionsAccepted == 2 && client.IsConnected, "the client has reconnected");
        Assert.Equal(2000 + 3 + 1000 + 3, await hub.SumOfClientAnswers(2).WaitAsync(TestHost.Patience));
    }
}
