using Mux.Tests.Infrastructure;

namespace Mux.Tests.Deadlines;

/// <summary>A server with a <see cref="DeadlineService"/> and an in-memory client of it.</summary>
internal sealed class Served : IAsyncDisposable
{
    private readonly MuxServer _server;
    private readonly MuxClient _client;

    private Served(MuxServer server, MuxClient client, DeadlineService service)
    {
        _server = server;
        _client = client;
        Service = service;
        Proxy = client.CreateProxy<IDeadlineService>();
    }

    public DeadlineService Service { get; }

    public IDeadlineService Proxy { get; }

    /// <summary>A client of the server, for a handler of another server to call on.</summary>
    public MuxClient Client => _client;

    public static async Task<Served> StartAsync(MuxClientOptions clientOptions, MuxServerOptions? serverOptions = null, IDeadlineService? nextHop = null)
    {
        var service = new DeadlineService(nextHop);
        var server = new MuxServer(serverOptions ?? new MuxServerOptions());
        server.AddService<IDeadlineService>(service);
        MuxClient client = await server.ConnectInMemoryAsync(clientOptions).WaitAsync(TestHost.Patience);
        return new Served(server, client, service);
    }

    public async ValueTask DisposeAsync()
    {
        await _client.DisposeAsync().AsTask().WaitAsync(TestHost.Patience);
        using var stop = new CancellationTokenSource(TestHost.Patience);
        await _server.StopAsync(stop.Token).WaitAsync(TestHost.Patience + TestHost.Patience);
    }
}
