using System.Net;
using System.Runtime.CompilerServices;
using Grpc.Net.Client;

namespace Mux.LoadRunner.Peers.Grpc;

/// <summary>
/// The grpc peer's client: one <see cref="GrpcChannel"/> shared by every caller. "grpc" gives it a
/// SocketsHttpHandler with EnableMultipleHttp2Connections = false (one HTTP/2 connection);
/// "grpc-default" takes GrpcChannel's own handler, which opens another connection whenever the
/// server's stream limit is reached.
/// </summary>
internal sealed class GrpcBenchClient : IBenchClient
{
    // Requests are never mutated, so every caller sends the same instances.
    private static readonly AddRequest s_add = new() { A = 1, B = 2 };
    private static readonly ListRequest s_list1 = new() { Count = 1 };
    private static readonly ListRequest s_list100 = new() { Count = 100 };
    private static readonly BytesRequest s_bytes1k = new() { Size = 1024 };

    private readonly GrpcChannel _channel;
    private readonly Bench.BenchClient _client;
    private readonly Uri _address;
    private readonly string _method;

    private GrpcBenchClient(Uri address, bool oneConnection, string method)
    {
        _address = address;
        _channel = CreateChannel(address, oneConnection);
        _client = new Bench.BenchClient(_channel);
        _method = method;
    }

    public static IBenchClient Connect(IPEndPoint endPoint, bool oneConnection, string method) =>
        new GrpcBenchClient(new Uri($"http://{endPoint}"), oneConnection, method);

    private static GrpcChannel CreateChannel(Uri address, bool oneConnection) => oneConnection
        ? GrpcChannel.ForAddress(address, new GrpcChannelOptions
        {
            HttpHandler = new SocketsHttpHandler
            {
                EnableMultipleHttp2Connections = false,
                PooledConnectionIdleTimeout = Timeout.InfiniteTimeSpan,
            },
            DisposeHttpClient = true,
        })
        : GrpcChannel.ForAddress(address);

    [AsyncMethodBuilder(typeof(PoolingAsyncValueTaskMethodBuilder))]
    public async ValueTask CallAsync(int caller)
    {
        switch (_method)
        {
            case "add":
                BenchChecks.Sum((await _client.AddAsync(s_add)).Sum);
                break;
            case "list1":
                Check(await _client.ListAsync(s_list1), 1);
                break;
            case "list100":
                Check(await _client.ListAsync(s_list100), 100);
                break;
            case "bytes1k":
                BenchChecks.Bytes((await _client.BytesAsync(s_bytes1k)).Data.Length);
                break;
            default:
                throw new ArgumentException($"Unknown method '{_method}'.");
        }
    }

    private static void Check(ListReply reply, int count) =>
        BenchChecks.Users(count, reply.Users.Count, reply.Users.Count > 0 ? reply.Users[0].City : null);

    /// <summary>grpc-dotnet exposes no frame or socket counters.</summary>
    public TransportCounters? GetCounters() => null;

    public async Task<ServerStats> GetServerStatsAsync(CancellationToken cancellationToken)
    {
        // A channel of its own, so the control call has its own connection like Mux's does.
        using GrpcChannel control = CreateChannel(_address, oneConnection: true);
        StatsReply s = await new Bench.BenchClient(control).GetStatsAsync(new StatsRequest(), cancellationToken: cancellationToken);
        return new ServerStats(s.WindowMarked, s.CpuMicroseconds, s.AllocatedBytes, s.Gen0, s.Gen1, s.Gen2, s.ConnectionsAccepted, 0, 0);
    }

    public ValueTask DisposeAsync()
    {
        _channel.Dispose();
        return ValueTask.CompletedTask;
    }
}
