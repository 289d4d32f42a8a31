using System.Runtime.CompilerServices;
using BenchmarkDotNet.Attributes;
using Mux.Samples.Contracts;

namespace Mux.Benchmarks;

/// <summary>
/// Whole calls through the generated <see cref="IUserService"/> proxy to a Mux server in the same
/// process, over in-memory pipes instead of a socket: request encoding, the client's writer, the
/// server's reader loop, dispatch to the thread pool, the handler, the response, the client's
/// reader loop and completion on the thread pool. The time is one call's latency (calls one after
/// another), or per call in a batch of concurrent calls (AddBatch*).
/// </summary>
/// <remarks>
/// MemoryDiagnoser counts the allocations of every thread, so "Allocated" is client and server
/// together; <c>--alloc-probe</c> (Program.cs) splits it between the two.
/// </remarks>
[MemoryDiagnoser]
[Config(typeof(MuxJobConfig))]
public class CallBenchmarks
{
    private const int LargestBatch = 500;

    // The calls of a batch, started before any is awaited. Reused, so a batch allocates no array.
    private readonly ValueTask<int>[] _batch = new ValueTask<int>[LargestBatch];

    private InMemoryConnection _connection = null!;
    private IUserService _proxy = null!;

    [GlobalSetup]
    public void Setup()
    {
        _connection = InMemoryConnection.StartAsync().GetAwaiter().GetResult();
        _proxy = _connection.Proxy;
        if (_proxy.Add(1, 2).AsTask().GetAwaiter().GetResult() != 3 || _proxy.List(100).GetAwaiter().GetResult().Count != 100)
        {
            throw new InvalidOperationException("The in-memory connection does not answer correctly.");
        }
    }

    [GlobalCleanup]
    public void Cleanup() => _connection.DisposeAsync().AsTask().GetAwaiter().GetResult();

    /// <summary>A ValueTask&lt;int&gt; call: its completion state is pooled.</summary>
    [Benchmark]
    public ValueTask<int> Add() => _proxy.Add(1, 2);

    /// <summary>A Task&lt;T&gt; call returning one user.</summary>
    [Benchmark]
    public Task<List<User>> List1() => _proxy.List(1);

    /// <summary>A Task&lt;T&gt; call returning 100 users (~7 KB of MessagePack).</summary>
    [Benchmark]
    public Task<List<User>> List100() => _proxy.List(100);

    // BenchmarkDotNet's OperationsPerInvoke is a constant of the attribute, so it cannot follow a
    // [Params] value: one method per batch size instead. Each reports the cost per call.

    /// <summary>A batch of 1: Add plus the cost of the batching code itself.</summary>
    [Benchmark(OperationsPerInvoke = 1)]
    public ValueTask<int> AddBatch1() => AddBatchAsync(1);

    /// <summary>100 concurrent Add calls; time and allocation per call.</summary>
    [Benchmark(OperationsPerInvoke = 100)]
    public ValueTask<int> AddBatch100() => AddBatchAsync(100);

    /// <summary>500 concurrent Add calls; time and allocation per call.</summary>
    [Benchmark(OperationsPerInvoke = LargestBatch)]
    public ValueTask<int> AddBatch500() => AddBatchAsync(LargestBatch);

    /// <summary>
    /// Starts <paramref name="count"/> calls, then awaits each in turn: they are all in flight at
    /// once, and their frames share flushes both ways. Pooling method builder: the state machine of
    /// this helper is reused rather than allocated per batch, so it does not show up in the
    /// allocation column (Task.WhenAll over AsTask() would allocate a Task per call and more).
    /// </summary>
    [AsyncMethodBuilder(typeof(PoolingAsyncValueTaskMethodBuilder<>))]
    private async ValueTask<int> AddBatchAsync(int count)
    {
        ValueTask<int>[] calls = _batch;
        for (int i = 0; i < count; i++)
        {
            calls[i] = _proxy.Add(i, 1);
        }

        int sum = 0;
        for (int i = 0; i < count; i++)
        {
            sum += await calls[i];
            calls[i] = default;
        }

        return sum;
    }
}
