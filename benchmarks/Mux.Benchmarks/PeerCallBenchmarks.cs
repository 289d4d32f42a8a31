using BenchmarkDotNet.Attributes;
using Mux.Samples.Contracts;
using Nerdbank.Streams;
using StreamJsonRpc;

namespace Mux.Benchmarks;

/// <summary>
/// The per-call cost of Mux next to StreamJsonRpc, the one peer of the load runner that runs over
/// any duplex stream: both in this process, over an in-memory transport (Mux's pipes, Nerdbank's
/// <see cref="FullDuplexStream"/>), both serving the same <see cref="UserService"/> instance and
/// both writing MessagePack with MessagePack-CSharp (StreamJsonRpc's <see cref="MessagePackFormatter"/>
/// behind a 4-byte length header, as in the load runner). Each is called the way its users call
/// it: Mux through the generated proxy, StreamJsonRpc by method name.
/// </summary>
/// <remarks>
/// grpc-dotnet and SignalR are not here: both need an ASP.NET Core server, and an in-memory one
/// (Microsoft.AspNetCore.TestHost) is not among this repository's packages; the load runner
/// measures them over loopback TCP. "Allocated" counts client and server together.
/// </remarks>
[MemoryDiagnoser]
[Config(typeof(MuxJobConfig))]
public class PeerCallBenchmarks
{
    private const int Batch = 100;

    private readonly ValueTask<int>[] _muxBatch = new ValueTask<int>[Batch];
    private readonly Task<int>[] _rpcBatch = new Task<int>[Batch];

    private InMemoryConnection _mux = null!;
    private IUserService _proxy = null!;
    private JsonRpc _rpcClient = null!;
    private JsonRpc _rpcServer = null!;

    /// <summary>The library making the call.</summary>
    [Params("mux", "streamjsonrpc")]
    public string Peer { get; set; } = "mux";

    [GlobalSetup]
    public void Setup()
    {
        _mux = InMemoryConnection.StartAsync().GetAwaiter().GetResult();
        _proxy = _mux.Proxy;

        (Stream clientStream, Stream serverStream) = FullDuplexStream.CreatePair();
        _rpcServer = new JsonRpc(new LengthHeaderMessageHandler(serverStream, serverStream, new MessagePackFormatter()));
        _rpcServer.AddLocalRpcTarget(new UserService());
        _rpcServer.StartListening();
        _rpcClient = new JsonRpc(new LengthHeaderMessageHandler(clientStream, clientStream, new MessagePackFormatter()));
        _rpcClient.StartListening();

        if (Add().AsTask().GetAwaiter().GetResult() != 3 || List100().GetAwaiter().GetResult().Count != 100
            || AddBatch100().AsTask().GetAwaiter().GetResult() != 3 * Batch)
        {
            throw new InvalidOperationException($"{Peer} does not answer correctly in memory.");
        }
    }

    [GlobalCleanup]
    public void Cleanup()
    {
        _rpcClient.Dispose();
        _rpcServer.Dispose();
        _mux.DisposeAsync().AsTask().GetAwaiter().GetResult();
    }

    /// <summary>Add(1, 2): the fixed cost of a call.</summary>
    [Benchmark]
    public ValueTask<int> Add() => Peer == "mux" ? _proxy.Add(1, 2) : new(_rpcClient.InvokeAsync<int>("Add", 1, 2));

    /// <summary>List(1): one small object back.</summary>
    [Benchmark]
    public Task<List<User>> List1() => List(1);

    /// <summary>List(100): 100 users back (5.4 KB of MessagePack).</summary>
    [Benchmark]
    public Task<List<User>> List100() => List(100);

    /// <summary>100 Add calls in flight at once; time and allocation per call.</summary>
    [Benchmark(OperationsPerInvoke = Batch)]
    public async ValueTask<int> AddBatch100()
    {
        int sum = 0;
        if (Peer == "mux")
        {
            for (int i = 0; i < Batch; i++)
            {
                _muxBatch[i] = _proxy.Add(1, 2);
            }

            for (int i = 0; i < Batch; i++)
            {
                sum += await _muxBatch[i].ConfigureAwait(false);
            }
        }
        else
        {
            for (int i = 0; i < Batch; i++)
            {
                _rpcBatch[i] = _rpcClient.InvokeAsync<int>("Add", 1, 2);
            }

            for (int i = 0; i < Batch; i++)
            {
                sum += await _rpcBatch[i].ConfigureAwait(false);
            }
        }

        return sum;
    }

    private Task<List<User>> List(int count) =>
        Peer == "mux" ? _proxy.List(count) : _rpcClient.InvokeAsync<List<User>>("List", count);
}
