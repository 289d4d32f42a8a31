using System.Net;
using System.Net.Sockets;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Hosting;

namespace Mux.Hosting.Tests;

public sealed class EndToEndTests
{
    /// <summary>A consumer that gets the proxy by constructor injection, as an application would.</summary>
    public sealed class Calculator(IHostingTestService service)
    {
        public ValueTask<int> Sum(int a, int b) => service.Add(a, b);
    }

    [Fact]
    public async Task InjectedProxyCallsTheServiceInAnotherHost()
    {
        await using TestHost server = await TestHost.StartServerAsync();
        await using TestHost client = await TestHost.StartClientAsync(
            server.ServerEndPoint,
            configure: b => b.Services.AddSingleton<Calculator>());

        Calculator calculator = client.Services.GetRequiredService<Calculator>();
        Assert.Equal(5, await calculator.Sum(2, 3).AsTask().WaitAsync(TestHost.Patience));

        IHostingTestService proxy = client.Services.GetRequiredService<IHostingTestService>();
        Assert.Equal(-1, await proxy.Add(2, -3).AsTask().WaitAsync(TestHost.Patience));

        MuxClient muxClient = client.Services.GetRequiredService<MuxClient>();
        Assert.True(muxClient.IsConnected);
        Assert.Equal(server.ServerEndPoint, muxClient.RemoteEndPoint);
    }

    [Fact]
    public async Task ServerAndClientLogStartAndStopWithFixedEventIds()
    {
        TestHost server = await TestHost.StartServerAsync();
        IPEndPoint endPoint = server.ServerEndPoint;
        TestHost client = await TestHost.StartClientAsync(endPoint);
        await client.Services.GetRequiredService<IHostingTestService>().Add(1, 1);

        await client.DisposeAsync();
        await server.DisposeAsync();

        Assert.Equal([100, 101, 102], server.Logs.EventIds("Mux.Hosting"));
        Assert.Equal([104], client.Logs.EventIds("Mux.Hosting"));
        Assert.Contains(client.Logs.Entries, e => e.Category == "Mux.Client" && e.EventId.Id == 20 && e.Message.Contains(endPoint.ToString(), StringComparison.Ordinal));
        Assert.Contains(server.Logs.Entries, e => e.EventId.Id == 100 && e.Message.Contains(endPoint.ToString(), StringComparison.Ordinal));

        // The core library logs through the logger factory from DI, too.
        Assert.Contains(server.Logs.Entries, e => e.Category == "Mux.Server");
    }

    [Fact]
    public async Task AddMuxClientTwiceOpensOneConnection()
    {
        await using TestHost server = await TestHost.StartServerAsync();
        await using TestHost client = await TestHost.StartClientAsync(server.ServerEndPoint, configure: b =>
        {
            b.Services.AddMuxClient(o => o.CallTimeout = TimeSpan.FromSeconds(20)).AddProxy<IHostingTestService>();
            Assert.Single(b.Services, d => d.ServiceType == typeof(IHostedService));
            Assert.Single(b.Services, d => d.ServiceType == typeof(MuxClient));
            Assert.Single(b.Services, d => d.ServiceType == typeof(IHostingTestService));
        });

        Assert.Equal(3, await client.Services.GetRequiredService<IHostingTestService>().Add(1, 2));
        MuxServer muxServer = server.Services.GetRequiredService<MuxServer>();
        Assert.Equal(1, muxServer.ConnectionsAccepted);
        Assert.Equal(1, muxServer.ActiveConnections);
    }

    [Fact]
    public async Task AddMuxServerTwiceRunsOneServer()
    {
        await using TestHost server = await TestHost.StartServerAsync(configure: b =>
            b.Services.AddMuxServer(o => o.MaxConcurrentCallsPerConnection = 10));

        Assert.Single(server.Services.GetServices<IHostedService>());
        await using TestHost client = await TestHost.StartClientAsync(server.ServerEndPoint);
        Assert.Equal(7, await client.Services.GetRequiredService<IHostingTestService>().Add(3, 4));
    }

    [Fact]
    public void ResolvingTheServerBeforeTheHostStartedThrows()
    {
        (HostApplicationBuilder builder, _) = TestHost.CreateBuilder();
        builder.Services.AddMuxServer(o => o.Listen(IPAddress.Loopback, 0));
        using IHost host = builder.Build();

        var server = Assert.Throws<InvalidOperationException>(() => host.Services.GetRequiredService<MuxServer>());
        Assert.Contains("host has started", server.Message, StringComparison.Ordinal);
    }

    [Fact]
    public async Task AProxyResolvedBeforeTheHostStarts_WorksOnceItHasStarted()
    {
        await using TestHost server = await TestHost.StartServerAsync();
        (HostApplicationBuilder builder, LogSink logs) = TestHost.CreateBuilder(new Dictionary<string, string?> { ["Mux:Client:Connect"] = server.ServerEndPoint.ToString() });
        builder.Services.AddMuxClient().AddProxy<IHostingTestService>();
        IHost host = builder.Build();
        try
        {
            // As a constructor that runs while the host starts would: the call waits for the connection.
            IHostingTestService early = host.Services.GetRequiredService<IHostingTestService>();
            Task<int> call = early.Add(2, 2).AsTask();

            await host.StartAsync().WaitAsync(TestHost.Patience);

            Assert.Equal(4, await call.WaitAsync(TestHost.Patience));
            Assert.Same(early, host.Services.GetRequiredService<IHostingTestService>());
            await host.StopAsync().WaitAsync(TestHost.Patience);
        }
        finally
        {
            await TestHost.DisposeHostAsync(host);
        }
    }

    [Fact]
    public async Task WorksWithScopeValidationAndValidateOnBuild()
    {
        var strict = new DefaultServiceProviderFactory(new ServiceProviderOptions { ValidateScopes = true, ValidateOnBuild = true });
        await using TestHost server = await TestHost.StartServerAsync(configure: b => b.ConfigureContainer(strict));
        await using TestHost client = await TestHost.StartClientAsync(server.ServerEndPoint, configure: b => b.ConfigureContainer(strict));
        IHostingTestService proxy = client.Services.GetRequiredService<IHostingTestService>();

        Assert.NotEqual(await proxy.GetInstanceId(), await proxy.GetInstanceId());
    }

    [Fact]
    public async Task AClientHostStartedBeforeItsServer_CallsSuccessfullyOnceTheServerIsUp()
    {
        // A port that was free a moment ago: nothing listens there yet.
        int port;
        using (var probe = new Socket(AddressFamily.InterNetwork, SocketType.Stream, ProtocolType.Tcp))
        {
            probe.Bind(new IPEndPoint(IPAddress.Loopback, 0));
            port = ((IPEndPoint)probe.LocalEndPoint!).Port;
        }

        var endPoint = new IPEndPoint(IPAddress.Loopback, port);
        await using TestHost client = await TestHost.StartClientAsync(endPoint, waitForConnection: false);
        MuxClient muxClient = client.Services.GetRequiredService<MuxClient>();
        await TestHost.WaitUntilAsync(() => client.Logs.Entries.Any(e => e.Category == "Mux.Client" && e.EventId.Id == 23), "the client reports that it cannot connect yet");
        Assert.NotEqual(MuxClientState.Connected, muxClient.State);
        Task<int> first = client.Services.GetRequiredService<IHostingTestService>().Add(20, 22).AsTask();

        await using TestHost server = await TestHost.StartServerAsync(configuration: new() { ["Mux:Server:Listen"] = endPoint.ToString() });

        Assert.Equal(42, await first.WaitAsync(TestHost.Patience));
        Assert.Equal(MuxClientState.Connected, muxClient.State);
    }

    [Fact]
    public async Task MatchingAuthTokensConnectAndAWrongOneFailsEveryCallWithTheRefusal()
    {
        await using TestHost server = await TestHost.StartServerAsync(configuration: new() { ["Mux:Server:AuthToken"] = "s3cret" });
        await using TestHost client = await TestHost.StartClientAsync(server.ServerEndPoint, new() { ["Mux:Client:AuthToken"] = "s3cret" });
        Assert.Equal(2, await client.Services.GetRequiredService<IHostingTestService>().Add(1, 1));

        await using TestHost wrong = await TestHost.StartClientAsync(server.ServerEndPoint, new() { ["Mux:Client:AuthToken"] = "wrong", ["Mux:Client:CallTimeout"] = "00:00:01" }, waitForConnection: false);

        // The call's failure gives the refusal only once an attempt has been refused; on a slow
        // machine the first one may still be under way when the 1 s has passed, so the call is
        // made after it was refused (ConnectFailed logged).
        await TestHost.WaitUntilAsync(() => wrong.Logs.Entries.Any(e => e.Category == "Mux.Client" && e.EventId.Name == "ConnectFailed"), "the client's first connect attempt to be refused");
        var failed = await Assert.ThrowsAsync<MuxConnectionException>(() => wrong.Services.GetRequiredService<IHostingTestService>().Add(1, 1).AsTask().WaitAsync(TestHost.Patience));
        Assert.Contains("refused the connection", failed.Message, StringComparison.Ordinal);
        Assert.True(failed.IsSafeToRetry);
        Assert.Equal(MuxClientState.Connecting, wrong.Services.GetRequiredService<MuxClient>().State);
    }

    [Fact]
    public async Task AHandlerFailureReachesTheCallerAsMuxRemoteException_WithItsMessageWhenDetailedErrorsAreConfigured()
    {
        await using TestHost server = await TestHost.StartServerAsync(configuration: new() { ["Mux:Server:EnableDetailedErrors"] = "true" });
        await using TestHost client = await TestHost.StartClientAsync(server.ServerEndPoint);

        var error = await Assert.ThrowsAsync<MuxRemoteException>(() => client.Services.GetRequiredService<IHostingTestService>().Fail("no such user"));
        Assert.Equal("no such user", error.Message);
        Assert.Equal(typeof(InvalidOperationException).FullName, error.RemoteExceptionType);
    }

    [Fact]
    public async Task AHostCanBeDisposedSynchronouslyAfterItRan()
    {
        TestHost server = await TestHost.StartServerAsync();
        TestHost client = await TestHost.StartClientAsync(server.ServerEndPoint);
        MuxClient muxClient = client.Services.GetRequiredService<MuxClient>();
        MuxServer muxServer = server.Services.GetRequiredService<MuxServer>();
        Assert.Equal(3, await client.Services.GetRequiredService<IHostingTestService>().Add(1, 2).AsTask().WaitAsync(TestHost.Patience));

        await client.StopAsync();
        await server.StopAsync();
        client.Host.Dispose();
        server.Host.Dispose();

        Assert.False(muxClient.IsConnected);
        Assert.Equal(0, muxServer.ActiveConnections);
    }
}
