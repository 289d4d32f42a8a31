using System.Net;

namespace Mux.Tests.Infrastructure;

/// <summary>A server with a <see cref="TestService"/> and a <see cref="RaceService"/>, and one
/// client connected to it, over loopback TCP (port 0) or over in-memory pipes.</summary>
public sealed class TestHost : IAsyncDisposable
{
    private TestHost(TransportKind kind, MuxServer server, MuxClient client, TestService service, RaceService race)
    {
        Kind = kind;
        Server = server;
        Client = client;
        Service = service;
        Proxy = client.CreateProxy<ITestService>();
        Race = race;
        RaceProxy = client.CreateProxy<IRaceService>();
    }

    /// <summary>How long a test waits for something that should happen promptly before failing.</summary>
    public static readonly TimeSpan Patience = TimeSpan.FromSeconds(15);

    public MuxServer Server { get; }

    public MuxClient Client { get; }

    public TestService Service { get; }

    public ITestService Proxy { get; }

    public TransportKind Kind { get; }

    public RaceService Race { get; }

    public IRaceService RaceProxy { get; }

    public static async Task<TestHost> StartTcpAsync(MuxServerOptions? serverOptions = null, MuxClientOptions? clientOptions = null)
    {
        serverOptions ??= new MuxServerOptions();
        serverOptions.EndPoint ??= new IPEndPoint(IPAddress.Loopback, 0);
        var service = new TestService();
        var race = new RaceService();
        var server = new MuxServer(serverOptions);
        server.AddService<ITestService>(service);
        server.AddService<IRaceService>(race);
        await server.StartAsync().WaitAsync(Patience);
        MuxClient client = await MuxClient.ConnectAsync(server.LocalEndPoint!, clientOptions).WaitAsync(Patience);
        return new TestHost(TransportKind.Tcp, server, client, service, race);
    }

    public static async Task<TestHost> StartInMemoryAsync(MuxServerOptions? serverOptions = null, MuxClientOptions? clientOptions = null)
    {
        var service = new TestService();
        var race = new RaceService();
        var server = new MuxServer(serverOptions ?? new MuxServerOptions());
        server.AddService<ITestService>(service);
        server.AddService<IRaceService>(race);
        MuxClient client = await server.ConnectInMemoryAsync(clientOptions).WaitAsync(Patience);
        return new TestHost(TransportKind.InMemory, server, client, service, race);
    }

    /// <summary>Opens a second connection to the same server, over the same transport.</summary>
    public Task<MuxClient> ConnectAnotherClientAsync(MuxClientOptions? clientOptions = null) =>
        (Kind == TransportKind.Tcp
            ? MuxClient.ConnectAsync(Server.LocalEndPoint!, clientOptions)
            : Server.ConnectInMemoryAsync(clientOptions)).WaitAsync(Patience);

    /// <summary>Releases every handler the test left waiting, then closes the client and stops the
    /// server, each within <see cref="Patience"/>: a teardown that hangs fails the test instead.</summary>
    public async ValueTask DisposeAsync()
    {
        Service.OpenBlockGate();
        Service.ReleaseHangingCalls();
        await Client.DisposeAsync().AsTask().WaitAsync(Patience);
        using var deadline = new CancellationTokenSource(Patience);
        await Server.StopAsync(deadline.Token).WaitAsync(Patience + Patience);
    }
}
