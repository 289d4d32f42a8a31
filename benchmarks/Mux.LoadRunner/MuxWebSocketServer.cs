using System.Net;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Hosting;
using Microsoft.AspNetCore.Hosting.Server;
using Microsoft.AspNetCore.Hosting.Server.Features;
using Microsoft.AspNetCore.Server.Kestrel.Core;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Logging;

namespace Mux.LoadRunner;

/// <summary>
/// The mux-ws server: the bench services on a Mux server of Mux.Hosting's AddMuxServer, served
/// only through Mux.AspNetCore's MapMux on Kestrel (HTTP/1.1, 127.0.0.1), so its client's one
/// connection is one WebSocket, as SignalR's is. Logging is off, as for the peers on Kestrel.
/// </summary>
internal sealed class MuxWebSocketServer : IAsyncDisposable
{
    /// <summary>The endpoint's path, on the server and in the client's URI.</summary>
    public const string Path = "/mux";

    private readonly WebApplication _app;

    private MuxWebSocketServer(WebApplication app, int port)
    {
        _app = app;
        Port = port;
    }

    public int Port { get; }

    /// <summary>The Mux server behind the endpoint, for its connections' counters.</summary>
    public MuxServer Server => _app.Services.GetRequiredService<MuxServer>();

    /// <param name="port">0 for any free port.</param>
    /// <param name="marks">The window marks its IBenchControl reports.</param>
    public static async Task<MuxWebSocketServer> StartAsync(int port, WindowMarks marks)
    {
        WebApplicationBuilder builder = WebApplication.CreateSlimBuilder();
        builder.Logging.ClearProviders();
        builder.WebHost.ConfigureKestrel(kestrel =>
        {
            kestrel.AddServerHeader = false;
            kestrel.Listen(IPAddress.Loopback, port, listen => listen.Protocols = HttpProtocols.Http1);
        });

        MuxWebSocketServer? started = null;
        builder.Services.AddSingleton(new BenchControl(marks, () => started?.Server.ConnectionsAccepted ?? 0));
        builder.Services.AddMuxServer(options =>
            {
                options.ShutdownTimeout = TimeSpan.FromSeconds(2);
                PassThroughInterceptor.AddTo(options);
            })
            .AddService<IBenchService, BenchService>(ServiceLifetime.Singleton)
            .AddService<IBenchStreams, BenchStreams>(ServiceLifetime.Singleton)
            .AddService<IBenchControl, BenchControl>(ServiceLifetime.Singleton);

        WebApplication app = builder.Build();
        app.MapMux(Path);
        await app.StartAsync();
        try
        {
            string address = app.Services.GetRequiredService<IServer>().Features.Get<IServerAddressesFeature>()?.Addresses.FirstOrDefault()
                ?? throw new InvalidOperationException("Kestrel reported no listening address.");
            started = new MuxWebSocketServer(app, new Uri(address).Port);
            return started;
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
