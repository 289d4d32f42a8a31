using BenchmarkDotNet.Attributes;
using Mux.Samples.Contracts;

namespace Mux.Benchmarks;

/// <summary>
/// The cost of a call's deadline (docs/protocol.md, "Deadlines"): the same Add call from a client
/// whose CallTimeout is the default 30 s (every Request carries the deadline header, every handler
/// runs with a MuxCallContext) and from one without a timeout (no header, no context).
/// </summary>
[MemoryDiagnoser]
[Config(typeof(MuxJobConfig))]
public class DeadlineBenchmarks
{
    private InMemoryConnection _connection = null!;
    private IUserService _proxy = null!;

    /// <summary>"30s" (the default) or "none" (Timeout.InfiniteTimeSpan).</summary>
    [Params("30s", "none")]
    public string CallTimeout { get; set; } = "30s";

    [GlobalSetup]
    public void Setup()
    {
        var options = new MuxClientOptions
        {
            CallTimeout = CallTimeout == "none" ? Timeout.InfiniteTimeSpan : TimeSpan.FromSeconds(30),
        };
        _connection = InMemoryConnection.StartAsync(options).GetAwaiter().GetResult();
        _proxy = _connection.Proxy;
        if (_proxy.Add(1, 2).AsTask().GetAwaiter().GetResult() != 3)
        {
            throw new InvalidOperationException("The in-memory connection does not answer correctly.");
        }
    }

    [GlobalCleanup]
    public void Cleanup() => _connection.DisposeAsync().AsTask().GetAwaiter().GetResult();

    [Benchmark]
    public ValueTask<int> Add() => _proxy.Add(1, 2);
}
