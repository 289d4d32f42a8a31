using System.Collections.Concurrent;
using System.Net;
using Mux.Tests.Infrastructure;

namespace Mux.Tests.Pipeline;

/// <summary>A server with a <see cref="PipelineService"/> and one client connected to it, over
/// loopback TCP (port 0) or in-memory pipes, sharing one log with the tests' interceptors.</summary>
public sealed class PipelineHost : IAsyncDisposable
{
    private PipelineHost(MuxServer server, MuxClient client, PipelineService service, TransportKind kind)
    {
        Server = server;
        Client = client;
        Service = service;
        Kind = kind;
        Proxy = client.CreateProxy<IPipelineService>();
    }

    public MuxServer Server { get; }

    public MuxClient Client { get; }

    public PipelineService Service { get; }

    public IPipelineService Proxy { get; }

    public TransportKind Kind { get; }

    /// <summary>What ran, in order, on both sides.</summary>
    public ConcurrentQueue<string> Log => Service.Log;

    /// <summary>Starts a server and a client. <paramref name="log"/> is the one the interceptors in
    /// the options write to (a new one when null).</summary>
    public static async Task<PipelineHost> StartAsync(TransportKind kind, MuxServerOptions? serverOptions = null, MuxClientOptions? clientOptions = null, ConcurrentQueue<string>? log = null)
    {
        serverOptions ??= new MuxServerOptions();
        var service = new PipelineService(log ?? new ConcurrentQueue<string>());
        var server = new MuxServer(serverOptions);
        server.AddService<IPipelineService>(service);
        MuxClient client;
        if (kind == TransportKind.Tcp)
        {
            serverOptions.EndPoint ??= new IPEndPoint(IPAddress.Loopback, 0);
            await server.StartAsync().WaitAsync(TestHost.Patience);
            client = await MuxClient.ConnectAsync(server.LocalEndPoint!, clientOptions).WaitAsync(TestHost.Patience);
        }
        else
        {
            client = await server.ConnectInMemoryAsync(clientOptions).WaitAsync(TestHost.Patience);
        }

        return new PipelineHost(server, client, service, kind);
    }

    /// <summary>Another client of the same server, over the same transport.</summary>
    public Task<MuxClient> ConnectAnotherClientAsync(MuxClientOptions? clientOptions = null) =>
        (Kind == TransportKind.Tcp ? MuxClient.ConnectAsync(Server.LocalEndPoint!, clientOptions) : Server.ConnectInMemoryAsync(clientOptions)).WaitAsync(TestHost.Patience);

    public async ValueTask DisposeAsync()
    {
        Service.Release();
        await Client.DisposeAsync().AsTask().WaitAsync(TestHost.Patience);
        using var deadline = new CancellationTokenSource(TestHost.Patience);
        await Server.StopAsync(deadline.Token).WaitAsync(TestHost.Patience + TestHost.Patience);
    }
}
