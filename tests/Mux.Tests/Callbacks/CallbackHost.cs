using System.Net;
using Mux.Tests.Infrastructure;

namespace Mux.Tests.Callbacks;

/// <summary>A server with a <see cref="CallbackHub"/> and clients that serve <see cref="IClientSide"/>.</summary>
internal sealed class CallbackHost : IAsyncDisposable
{
    private readonly List<MuxClient> _clients = new();

    private CallbackHost(MuxServer server, TransportKind kind)
    {
        Server = server;
        Kind = kind;
    }

    public MuxServer Server { get; }

    public TransportKind Kind { get; }

    public CallbackHub Hub { get; } = new();

    public static async Task<CallbackHost> StartAsync(TransportKind kind, MuxServerOptions? options = null)
    {
        options ??= new MuxServerOptions();
        var server = new MuxServer(options);
        var host = new CallbackHost(server, kind);
        server.AddService<ICallbackHub>(host.Hub);
        if (kind == TransportKind.Tcp)
        {
            options.EndPoint ??= new IPEndPoint(IPAddress.Loopback, 0);
            await server.StartAsync().WaitAsync(TestHost.Patience);
        }

        return host;
    }

    /// <summary>Connects a client that serves <paramref name="side"/> (none when null).</summary>
    public async Task<MuxClient> ConnectAsync(IClientSide? side, MuxClientOptions? options = null)
    {
        MuxClient client = Kind == TransportKind.Tcp
            ? await MuxClient.ConnectAsync(Server.LocalEndPoint!, options).WaitAsync(TestHost.Patience)
            : await Server.ConnectInMemoryAsync(options).WaitAsync(TestHost.Patience);
        if (side is not null)
        {
            client.AddService(side);
        }

        lock (_clients)
        {
            _clients.Add(client);
        }

        return client;
    }

    /// <summary>Connects a client serving <paramref name="side"/> and returns the server's handle to it.</summary>
    public async Task<(MuxClient Client, MuxRemoteClient Remote)> ConnectAndRegisterAsync(IClientSide? side, MuxClientOptions? options = null)
    {
        MuxClient client = await ConnectAsync(side, options);
        await client.CreateProxy<ICallbackHub>().Register().WaitAsync(TestHost.Patience);
        Assert.True(Hub.Registered.TryDequeue(out MuxRemoteClient? remote));
        return (client, remote!);
    }

    public async ValueTask DisposeAsync()
    {
        foreach (MuxClient client in _clients)
        {
            await client.DisposeAsync().AsTask().WaitAsync(TestHost.Patience);
        }
        using var stop = new CancellationTokenSource(TestHost.Patience);
        await Server.StopAsync(stop.Token).WaitAsync(TestHost.Patience + TestHost.Patience);
    }
}
