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
        Assert.Same(proxy, client.Services.GetRequiredService<IHostingTestService>());
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
        Assert.Equal([103, 104], client.Logs.EventIds("Mux.Hosting"));
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
    public void ResolvingTheClientOrServerBeforeTheHostStartedThrows()
    {
        (HostApplicationBuilder builder, _) = TestHost.CreateBuilder(new Dictionary<string, string?> { ["Mux:Client:Connect"] = "127.0.0.1:5000" });
        builder.Services.AddMuxServer(o => o.Listen(IPAddress.Loopback, 0));
        builder.Services.AddMuxClient().AddProxy<IHostingTestService>();
        using IHost host = builder.Build();

        var client = Assert.Throws<InvalidOperationException>(() => host.Services.GetRequiredService<MuxClient>());
        Assert.Contains("host has started", client.Message, StringComparison.Ordinal);
        var proxy = Assert.Throws<InvalidOperationException>(() => host.Services.GetRequiredService<IHostingTestService>());
        Assert.Contains("host has started", proxy.Message, StringComparison.Ordinal);
        var server = Assert.Throws<InvalidOperationException>(() => host.Services.GetRequiredService<MuxServer>());
        Assert.Contains("host has started", server.Message, StringComparison.Ordinal);
    }

    [Fact]
    public async Task TheClientResolvesOnceTheHostHasStartedEvenAfterAnEarlyAttempt()
    {
        await using TestHost server = await TestHost.StartServerAsync();
        (HostApplicationBuilder builder, LogSink logs) = TestHost.CreateBuilder(new Dictionary<string, string?> { ["Mux:Client:Connect"] = server.ServerEndPoint.ToString() });
        builder.Services.AddMuxClient().AddProxy<IHostingTestService>();
        IHost host = builder.Build();
        try
        {
            Assert.Throws<InvalidOperationException>(() => host.Services.GetRequiredService<IHostingTestService>());

            await host.StartAsync().WaitAsync(TestHost.Patience);

            Assert.Equal(4, await host.Services.GetRequiredService<IHostingTestService>().Add(2, 2));
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
    public async Task AnUnreachableServerFailsTheClientHostStart()
    {
        // A port that was free a moment ago: nothing listens there.
        int port;
        using (var probe = new Socket(AddressFamily.InterNetwork, SocketType.Stream, ProtocolType.Tcp))
        {
            probe.Bind(new IPEndPoint(IPAddress.Loopback, 0));
            port = ((IPEndPoint)probe.LocalEndPoint!).Port;
        }

        await Assert.ThrowsAsync<MuxConnectionException>(() => TestHost.StartClientAsync(new IPEndPoint(IPAddress.Loopback, port)));
    }

    [Fact]
    public async Task MatchingAuthTokensConnectAndAWrongOneFailsTheStart()
    {
        await using TestHost server = await TestHost.StartServerAsync(configuration: new() { ["Mux:Server:AuthToken"] = "s3cret" });
        await using TestHost client = await TestHost.StartClientAsync(server.ServerEndPoint, new() { ["Mux:Client:AuthToken"] = "s3cret" });
        Assert.Equal(2, await client.Services.GetRequiredService<IHostingTestService>().Add(1, 1));

        await Assert.ThrowsAsync<MuxConnectionException>(() => TestHost.StartClientAsync(server.ServerEndPoint, new() { ["Mux:Client:AuthToken"] = "wrong" }));
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
        Assert.NotNull(client.Services.GetRequiredService<MuxClient>());
        Assert.NotNull(server.Services.GetRequiredService<MuxServer>());

        await client.StopAsync();
        await server.StopAsync();
        client.Host.Dispose();
        server.Host.Dispose();
    }
}
