using System.Net;
using Mux.LoadRunner.Peers.Grpc;
using Mux.LoadRunner.Peers.SignalR;
using Mux.LoadRunner.Peers.StreamJsonRpc;

namespace Mux.LoadRunner.Peers;

/// <summary>Starts the server and connects the client of each peer system.</summary>
internal static class PeerSystems
{
    public static bool IsPeer(string system) =>
        system is BenchSystems.Grpc or BenchSystems.GrpcDefault or BenchSystems.StreamJsonRpc or BenchSystems.SignalR;

    public static Task<IPeerServer> StartServerAsync(string system, int port) => system switch
    {
        BenchSystems.Grpc => GrpcBenchServer.StartAsync(port, oneConnection: true),
        BenchSystems.GrpcDefault => GrpcBenchServer.StartAsync(port, oneConnection: false),
        BenchSystems.StreamJsonRpc => Task.FromResult<IPeerServer>(JsonRpcBenchServer.Start(port)),
        BenchSystems.SignalR => SignalRBenchServer.StartAsync(port),
        _ => throw new ArgumentException($"'{system}' is not a peer system."),
    };

    public static Task<IBenchClient> ConnectAsync(string system, IPEndPoint endPoint, string method, CancellationToken cancellationToken) => system switch
    {
        BenchSystems.Grpc => Task.FromResult(GrpcBenchClient.Connect(endPoint, oneConnection: true, method)),
        BenchSystems.GrpcDefault => Task.FromResult(GrpcBenchClient.Connect(endPoint, oneConnection: false, method)),
        BenchSystems.StreamJsonRpc => JsonRpcBenchClient.ConnectAsync(endPoint, method, cancellationToken),
        BenchSystems.SignalR => SignalRBenchClient.ConnectAsync(endPoint, method, cancellationToken),
        _ => throw new ArgumentException($"'{system}' is not a peer system."),
    };
}
