using System.Net;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Hosting;
using Microsoft.AspNetCore.Hosting.Server;
using Microsoft.AspNetCore.Hosting.Server.Features;
using Microsoft.AspNetCore.Server.Kestrel.Core;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Logging;

namespace Mux.LoadRunner.Peers;

/// <summary>
/// A Kestrel host on 127.0.0.1 for the peers that run over HTTP (grpc, SignalR). Logging is off
/// (console logging would cost more than the calls), and a connection middleware counts every TCP
/// connection Kestrel accepts, so the runner reports how many the client really opened.
/// </summary>
internal sealed class KestrelPeerServer : IPeerServer
{
    private readonly WebApplication _app;
    private readonly PeerStats _stats;

    private KestrelPeerServer(WebApplication app, PeerStats stats, int port)
    {
        _app = app;
        _stats = stats;
        Port = port;
    }

    public int Port { get; }

    public WindowMarks Marks => _stats.Marks;

    /// <param name="port">0 for any free port.</param>
    /// <param name="protocols">Http2 for grpc's h2c, Http1 for SignalR's WebSocket.</param>
    /// <param name="configureKestrel">The peer's own limits (stream counts).</param>
    /// <param name="configureServices">The peer's services; <see cref="PeerStats"/> is registered already.</param>
    /// <param name="map">Maps the peer's endpoints.</param>
    public static async Task<IPeerServer> StartAsync(
        int port,
        HttpProtocols protocols,
        Action<KestrelServerOptions> configureKestrel,
        Action<IServiceCollection> configureServices,
        Action<WebApplication> map)
    {
        var stats = new PeerStats();
        WebApplicationBuilder builder = WebApplication.CreateSlimBuilder();
        builder.Logging.ClearProviders();
        builder.WebHost.ConfigureKestrel(kestrel =>
        {
            kestrel.AddServerHeader = false;
            configureKestrel(kestrel);
            kestrel.Listen(IPAddress.Loopback, port, listen =>
            {
                listen.Protocols = protocols;
                listen.Use(next => connection =>
                {
                    stats.ConnectionAccepted();
                    return next(connection);
                });
            });
        });
        builder.Services.AddSingleton(stats);
        configureServices(builder.Services);

        WebApplication app = builder.Build();
        map(app);
        await app.StartAsync();
        try
        {
            string address = app.Services.GetRequiredService<IServer>().Features.Get<IServerAddressesFeature>()?.Addresses.FirstOrDefault()
                ?? throw new InvalidOperationException("Kestrel reported no listening address.");
            return new KestrelPeerServer(app, stats, new Uri(address).Port);
        }
        catch
        {
            await app.DisposeAsync();
            throw;
        }
    }

    public async ValueTask DisposeAsync()
    {
        using (var stop = new CancellationTokenSource(TimeSpan.FromSeconds(2)))
        {
            await _app.StopAsync(stop.Token);
        }

        await _app.DisposeAsync();
    }
}
