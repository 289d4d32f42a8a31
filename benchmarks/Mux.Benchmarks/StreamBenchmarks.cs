using System.Runtime.CompilerServices;
using BenchmarkDotNet.Attributes;

namespace Mux.Benchmarks;

/// <summary>A server stream of ints, the contract <see cref="StreamBenchmarks"/> reads.</summary>
[MuxService]
public interface IIntStream
{
    /// <summary>Streams 0 .. count-1.</summary>
    IAsyncEnumerable<int> Ints(int count, CancellationToken cancellationToken = default);
}

/// <summary>Serves <see cref="IIntStream"/>.</summary>
internal sealed class IntStream : IIntStream
{
    public async IAsyncEnumerable<int> Ints(int count, [EnumeratorCancellation] CancellationToken cancellationToken = default)
    {
        for (int i = 0; i < count; i++)
        {
            yield return i;
        }

        await Task.CompletedTask;
    }
}

/// <summary>
/// One server stream of small items over in-memory pipes, client and server in this process: the
/// time and the bytes allocated per item (OperationsPerInvoke), both sides together. A stream's
/// own setup (its call, enumerators, linked token source) is spread over its
/// <see cref="Items"/> items; what stays per item is what batching and pooling are for.
/// </summary>
[MemoryDiagnoser]
[Config(typeof(MuxJobConfig))]
public class StreamBenchmarks
{
    private const int Items = 100_000;

    private MuxServer _server = null!;
    private MuxClient _client = null!;
    private IIntStream _proxy = null!;

    [GlobalSetup]
    public void Setup()
    {
        _server = new MuxServer(new MuxServerOptions());
        _server.AddService<IIntStream>(new IntStream());
        _client = _server.ConnectInMemoryAsync().GetAwaiter().GetResult();
        _proxy = _client.CreateProxy<IIntStream>();
        if (ReadIntsAsync().GetAwaiter().GetResult() != (long)Items * (Items - 1) / 2)
        {
            throw new InvalidOperationException("The stream did not deliver 0 .. Items-1.");
        }
    }

    [GlobalCleanup]
    public void Cleanup()
    {
        _client.DisposeAsync().AsTask().GetAwaiter().GetResult();
        _server.DisposeAsync().AsTask().GetAwaiter().GetResult();
    }

    /// <summary>Reads a stream of <see cref="Items"/> ints; the figures are per item.</summary>
    [Benchmark(OperationsPerInvoke = Items)]
    public async Task<long> ReadIntsAsync()
    {
        long sum = 0;
        await foreach (int value in _proxy.Ints(Items))
        {
            sum += value;
        }

        return sum;
    }
}
