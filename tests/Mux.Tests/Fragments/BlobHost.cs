using System.Net;
using Mux.Tests.Infrastructure;

namespace Mux.Tests.Fragments;

/// <summary>A server with a <see cref="BlobService"/> on loopback TCP (port 0) and one client.</summary>
internal sealed class BlobHost : IAsyncDisposable
{
    private BlobHost(MuxServer server, MuxClient client, BlobService service)
    {
        Server = server;
        Client = client;
        Service = service;
        Proxy = client.CreateProxy<IBlobService>();
    }

    public MuxServer Server { get; }

    public MuxClient Client { get; }

    public BlobService Service { get; }

    public IBlobService Proxy { get; }

    public static async Task<BlobHost> StartAsync(MuxServerOptions? serverOptions = null, MuxClientOptions? clientOptions = null)
    {
        serverOptions ??= new MuxServerOptions();
        serverOptions.EndPoint ??= new IPEndPoint(IPAddress.Loopback, 0);
        var service = new BlobService();
        var server = new MuxServer(serverOptions);
        server.AddService<IBlobService>(service);
        await server.StartAsync().WaitAsync(TestHost.Patience);
        MuxClient client = await MuxClient.ConnectAsync(server.LocalEndPoint!, clientOptions).WaitAsync(TestHost.Patience);
        return new BlobHost(server, client, service);
    }

    public async ValueTask DisposeAsync()
    {
        await Client.DisposeAsync().AsTask().WaitAsync(TestHost.Patience);
        using var deadline = new CancellationTokenSource(TestHost.Patience);
        await Server.StopAsync(deadline.Token).WaitAsync(TestHost.Patience + TestHost.Patience);
    }
}
