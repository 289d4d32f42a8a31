using System.Net;

namespace Mux.Tests.Diagnostics;

/// <summary>A server with a <see cref="TelemetryTestService"/> on 127.0.0.1 (port 0) and a client
/// connected to it over TCP.</summary>
internal sealed class TelemetryHost : IAsyncDisposable
{
    private TelemetryHost(MuxServer server, MuxClient client, TelemetryTestService service)
    {
        Server = server;
        Client = client;
        Service = service;
        Proxy = client.CreateProxy<ITelemetryTestService>();
    }

    public static readonly TimeSpan Patience = TimeSpan.FromSeconds(15);

    public MuxServer Server { get; }

    public MuxClient Client { get; }

    public TelemetryTestService Service { get; }

    public ITelemetryTestService Proxy { get; }

    public IPEndPoint EndPoint => (IPEndPoint)Server.LocalEndPoint!;

    public static async Task<TelemetryHost> StartAsync()
    {
        var service = new TelemetryTestService();
        var server = new MuxServer(new MuxServerOptions { EndPoint = new IPEndPoint(IPAddress.Loopback, 0) });
        server.AddService<ITelemetryTestService>(service);
        await server.StartAsync();
        MuxClient client = await MuxClient.ConnectAsync(server.LocalEndPoint!);
        return new TelemetryHost(server, client, service);
    }

    public async ValueTask DisposeAsync()
    {
        Service.Gate.TrySetResult();
        await Client.DisposeAsync();
        await Server.StopAsync(new CancellationTokenSource(Patience).Token);
    }
}
