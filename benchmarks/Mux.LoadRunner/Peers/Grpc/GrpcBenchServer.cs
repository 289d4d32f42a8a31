using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Server.Kestrel.Core;
using Microsoft.Extensions.DependencyInjection;

namespace Mux.LoadRunner.Peers.Grpc;

/// <summary>The grpc peer's server: grpc-dotnet on Kestrel, HTTP/2 without TLS (h2c).</summary>
internal static class GrpcBenchServer
{
    /// <summary>
    /// Streams Kestrel allows on one connection for the "grpc" system: above the runner's 100,000
    /// callers, so all of them share the one connection. Kestrel's default is 100; "grpc-default"
    /// keeps it, and its client opens more connections past 100 callers.
    /// </summary>
    private const int OneConnectionMaxStreams = 200_000;

    public static Task<IPeerServer> StartAsync(int port, bool oneConnection) => KestrelPeerServer.StartAsync(
        port,
        HttpProtocols.Http2,
        kestrel =>
        {
            if (oneConnection)
            {
                kestrel.Limits.Http2.MaxStreamsPerConnection = OneConnectionMaxStreams;
            }
        },
        services =>
        {
            services.AddGrpc();
            services.AddSingleton<GrpcBenchService>();
        },
        app => app.MapGrpcService<GrpcBenchService>());
}
