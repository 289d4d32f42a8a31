using BenchmarkDotNet.Attributes;
using Mux.Connection;

namespace Mux.Benchmarks;

/// <summary>
/// A count of calls in flight changed from <see cref="Threads"/> threads at once: the per-core
/// <see cref="CoreStripedCounter"/> against one interlocked counter
/// (as the production <see cref="CallTable{TCall}"/> keeps).
/// </summary>
/// <remarks>
/// One operation is one call: an add and a remove on the same thread (as a call is counted in and
/// out, on whichever cores its caller and its reader run), with nothing between. In
/// <see cref="CountAddRemoveRead"/> each remove is followed by a read of the count, as the drain
/// check after GoAway (and the server's idle tracking) reads it after every call; in
/// <see cref="CountAddRemove"/> nothing reads it, as in steady running. The count starts at 1,024
/// (calls in flight that stay); no read may come out below that, and after every invocation it must
/// be exactly that, or the case fails.
/// </remarks>
[MemoryDiagnoser]
[Config(typeof(CallStructureJobConfig))]
public class CallStructureCountBenchmarks
{
    private const int CallsPerInvoke = 256 * 1024; // divisible by every Threads value
    private const int InFlight = CallPipeline.MaxInFlight;

    private WorkerThreads _threads = null!;
    private Func<long> _read = null!;

    public enum CountKind
    {
        Striped,
        Interlocked,
    }

    [Params(CountKind.Striped, CountKind.Interlocked)]
    public CountKind Count { get; set; }

    [Params(1, 2, 4, 8, 16, 64)]
    public int Threads { get; set; }

    [GlobalSetup(Target = nameof(CountAddRemove))]
    public void SetupAddRemove() => Setup(reads: false);

    [GlobalSetup(Target = nameof(CountAddRemoveRead))]
    public void SetupAddRemoveRead() => Setup(reads: true);

    [Benchmark(OperationsPerInvoke = CallsPerInvoke)]
    public void CountAddRemove() => RunAndCheck();

    [Benchmark(OperationsPerInvoke = CallsPerInvoke)]
    public void CountAddRemoveRead() => RunAndCheck();

    [GlobalCleanup]
    public void Cleanup() => _threads.Dispose();

    private void RunAndCheck()
    {
        _threads.Run();
        long count = _read();
        if (count != InFlight)
        {
            throw new InvalidOperationException($"{Count}: the count reads {count} after an invocation, where {InFlight} calls are in.");
        }
    }

    private void Setup(bool reads)
    {
        _threads = new WorkerThreads(Threads);
        if (Count == CountKind.Striped)
        {
            var counter = new CoreStripedCounter();
            _read = counter.Sum;
            Start(new StripedCount(counter), reads);
        }
        else
        {
            var counter = new InterlockedCounter();
            _read = counter.Read;
            Start(new SingleCount(counter), reads);
        }
    }

    private void Start<TCounter>(TCounter counter, bool reads)
        where TCounter : struct, ICounter
    {
        for (int i = 0; i < InFlight; i++)
        {
            counter.Increment();
        }

        int perThread = CallsPerInvoke / Threads;
        _threads.Start(reads
            ? _ =>
            {
                for (int i = 0; i < perThread; i++)
                {
                    counter.Increment();
                    counter.Decrement();
                    if (counter.Read() < InFlight)
                    {
                        throw new InvalidOperationException("The count read short of the calls that stay in.");
                    }
                }
            }
            : _ =>
            {
                for (int i = 0; i < perThread; i++)
                {
                    counter.Increment();
                    counter.Decrement();
                }
            });
    }

    private interface ICounter
    {
        void Increment();

        void Decrement();

        long Read();
    }

    private readonly struct StripedCount(CoreStripedCounter counter) : ICounter
    {
        public void Increment() => counter.Increment();

        public void Decrement() => counter.Decrement();

        public long Read() => counter.Sum();
    }

    private readonly struct SingleCount(InterlockedCounter counter) : ICounter
    {
        public void Increment() => counter.Increment();

        public void Decrement() => counter.Decrement();

        public long Read() => counter.Read();
    }
}

/// <summary>The simple count: one int every thread changes with an interlocked operation (a full
/// fence, as the drain checks' pairing needs) and reads with a volatile read.</summary>
internal sealed class InterlockedCounter
{
    // Calls in; changed by every thread.
    private int _count;

    public void Increment() => Interlocked.Increment(ref _count);

    public void Decrement() => Interlocked.Decrement(ref _count);

    public long Read() => Volatile.Read(ref _count);
}
