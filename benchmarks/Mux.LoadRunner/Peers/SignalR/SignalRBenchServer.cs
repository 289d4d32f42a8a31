using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Server.Kestrel.Core;
using Microsoft.Extensions.DependencyInjection;

namespace Mux.LoadRunner.Peers.SignalR;

/// <summary>The SignalR peer's server: a hub on Kestrel, MessagePack hub protocol, WebSockets.</summary>
internal static class SignalRBenchServer
{
    /// <summary>The hub's path, on the server and in the client's URL.</summary>
    public const string HubPath = "/bench";

    /// <summary>
    /// Invocations one connection may run at once. SignalR's default is 1, which would serialize
    /// every caller of the one connection; this is above the runner's 100,000 callers.
    /// </summary>
    private const int MaxParallelInvocations = 200_000;

    public static Task<IPeerServer> StartAsync(int port) => KestrelPeerServer.StartAsync(
        port,
        HttpProtocols.Http1,
        static _ => { },
        static services =>
        {
            services.AddSingleton<BenchService>();
            services.AddSignalR(options => options.MaximumParallelInvocationsPerClient = MaxParallelInvocations)
                .AddMessagePackProtocol();
        },
        static app => app.MapHub<BenchHub>(HubPath));
}
