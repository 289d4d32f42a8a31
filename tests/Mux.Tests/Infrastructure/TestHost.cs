using System.Net;

namespace Mux.Tests.Infrastructure;

/// <summary>A server with a <see cref="TestService"/> and one client connected to it, over
/// loopback TCP (port 0) or over in-memory pipes.</summary>
public sealed class TestHost : IAsyncDisposable
{
    private TestHost(MuxServer server, MuxClient client, TestService service)
    {
        Server = server;
        Client = client;
        Service = service;
        Proxy = client.CreateProxy<ITestService>();
    }

    /// <summary>How long a test waits for something that should happen promptly before failing.</summary>
    public static readonly TimeSpan Patience = TimeSpan.FromSeconds(15);

    public MuxServer Server { get; }

    public MuxClient Client { get; }

    public TestService Service { get; }

    public ITestService Proxy { get; }

    public static async Task<TestHost> StartTcpAsync(MuxServerOptions? serverOptions = null, MuxClientOptions? clientOptions = null)
    {
        serverOptions ??= new MuxServerOptions();
        serverOptions.EndPoint ??= new IPEndPoint(IPAddress.Loopback, 0);
        var service = new TestService();
        var server = new MuxServer(serverOptions);
        server.AddService<ITestService>(service);
        await server.StartAsync();
        MuxClient client = await MuxClient.ConnectAsync(server.LocalEndPoint!, clientOptions);
        return new TestHost(server, client, service);
    }

    public static async Task<TestHost> StartInMemoryAsync(MuxServerOptions? serverOptions = null, MuxClientOptions? clientOptions = null)
    {
        var service = new TestService();
        var server = new MuxServer(serverOptions ?? new MuxServerOptions());
        server.AddService<ITestService>(service);
        MuxClient client = await server.ConnectInMemoryAsync(clientOptions);
        return new TestHost(server, client, service);
    }

    public async ValueTask DisposeAsync()
    {
        Service.OpenBlockGate();
        Service.ReleaseHangingCalls();
        await Client.DisposeAsync();
        await Server.StopAsync(new CancellationTokenSource(Patience).Token);
    }
}
