using System.Net;
using Mux.Tests.Callbacks;
using Mux.Tests.Infrastructure;

namespace Mux.Tests.Fragments;

/// <summary>A server on loopback TCP (port 0) serving <see cref="IBlobService"/>,
/// <see cref="IHeaderedStreams"/> and <see cref="ICallbackHub"/>, and one client that serves
/// <see cref="IClientBlobs"/> and has registered, so the test can call it from the server.</summary>
internal sealed class TwoWayHost : IAsyncDisposable
{
    private TwoWayHost(MuxServer server, MuxClient client, BlobService service, ClientBlobs clientService, MuxRemoteClient remote)
    {
        Server = server;
        Client = client;
        Service = service;
        ClientService = clientService;
        Remote = remote;
        Proxy = client.CreateProxy<IBlobService>();
        Streams = client.CreateProxy<IHeaderedStreams>();
        ClientProxy = remote.CreateProxy<IClientBlobs>();
    }

    public MuxServer Server { get; }

    public MuxClient Client { get; }

    /// <summary>The server's <see cref="IBlobService"/>.</summary>
    public BlobService Service { get; }

    /// <summary>The client's <see cref="IClientBlobs"/>.</summary>
    public ClientBlobs ClientService { get; }

    /// <summary>The server's handle to the client.</summary>
    public MuxRemoteClient Remote { get; }

    /// <summary>Calls from the client to the server.</summary>
    public IBlobService Proxy { get; }

    public IHeaderedStreams Streams { get; }

    /// <summary>Calls from the server to the client.</summary>
    public IClientBlobs ClientProxy { get; }

    public static async Task<TwoWayHost> StartAsync(MuxServerOptions? serverOptions = null, MuxClientOptions? clientOptions = null)
    {
        serverOptions ??= new MuxServerOptions();
        serverOptions.EndPoint ??= new IPEndPoint(IPAddress.Loopback, 0);
        var service = new BlobService();
        var hub = new CallbackHub();
        var server = new MuxServer(serverOptions);
        server.AddService<IBlobService>(service);
        server.AddService<IHeaderedStreams>(new HeaderedStreams());
        server.AddService<ICallbackHub>(hub);
        await server.StartAsync().WaitAsync(TestHost.Patience);
        MuxClient client = await MuxClient.ConnectAsync(server.LocalEndPoint!, clientOptions).WaitAsync(TestHost.Patience);
        var clientService = new ClientBlobs();
        client.AddService<IClientBlobs>(clientService);
        await client.CreateProxy<ICallbackHub>().Register().WaitAsync(TestHost.Patience);
        Assert.True(hub.Registered.TryDequeue(out MuxRemoteClient? remote));
        return new TwoWayHost(server, client, service, clientService, remote!);
    }

    public async ValueTask DisposeAsync()
    {
        await Client.DisposeAsync().AsTask().WaitAsync(TestHost.Patience);
        using var deadline = new CancellationTokenSource(TestHost.Patience);
        await Server.StopAsync(deadline.Token).WaitAsync(TestHost.Patience + TestHost.Patience);
    }
}
