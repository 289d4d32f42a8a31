using System.Collections.Immutable;
using System.Globalization;
using System.Runtime.InteropServices;
using BenchmarkDotNet.Configs;
using BenchmarkDotNet.Jobs;
using BenchmarkDotNet.Order;
using BenchmarkDotNet.Reports;
using BenchmarkDotNet.Running;
using Mux.Connection;
using Perfolizer.Horology;

namespace Mux.Benchmarks;

/// <summary>
/// The CallStructure suites' job: 3 warmup and 12 measured iterations of 200 ms, one launch, no
/// unrolling (an invocation is already tens of thousands of operations on every thread). Their
/// 72 rows fit in about 6 minutes; <c>--job dry</c> on the command line replaces it, as with
/// <see cref="MuxJobConfig"/>. The cases run, and are listed, by method, then thread count, then
/// variant: the variants compared at one thread count run seconds apart, so a drift in the
/// machine's speed over the run moves them together rather than favouring the variant that ran
/// first.
/// </summary>
public sealed class CallStructureJobConfig : ManualConfig
{
    public CallStructureJobConfig()
    {
        AddJob(Job.Default
            .WithId("CallStructure")
            .WithLaunchCount(1)
            .WithWarmupCount(3)
            .WithIterationCount(12)
            .WithIterationTime(TimeInterval.FromMilliseconds(200))
            .WithUnrollFactor(1)
            .AsDefault());
        Orderer = new VariantsTogether();
    }

    private sealed class VariantsTogether : DefaultOrderer
    {
        public override IEnumerable<BenchmarkCase> GetExecutionOrder(
            ImmutableArray<BenchmarkCase> benchmarkCases, IEnumerable<BenchmarkLogicalGroupRule>? order = null) => Order(benchmarkCases);

        public override IEnumerable<BenchmarkCase> GetSummaryOrder(ImmutableArray<BenchmarkCase> benchmarksCases, Summary summary) =>
            Order(benchmarksCases);

        // Each suite has Threads and one enum parameter, the variant, ordered as declared.
        private static IEnumerable<BenchmarkCase> Order(ImmutableArray<BenchmarkCase> cases) => cases
            .OrderBy(c => c.Descriptor.WorkloadMethod.Name, StringComparer.Ordinal)
            .ThenBy(c => (int)c.Parameters["Threads"])
            .ThenBy(c => c.Parameters.Items.Where(p => p.Name != "Threads").Sum(p => Convert.ToInt32(p.Value, CultureInfo.InvariantCulture)));
    }
}

/// <summary>A call as the structures see it: an id for the tables. Pooled by its ring: reused
/// under a new id once it is out of the structure.</summary>
internal sealed class BenchCall : ICallTableEntry
{
    public uint CallId { get; set; }
}

/// <summary>
/// A case's threads, made once and released once per invocation: each runs the body with its
/// index, and the invocation ends when all have returned. A failure on one thread stops the others'
/// waits (<see cref="Wait"/>) and is rethrown on the benchmark's thread, so the case fails.
/// </summary>
internal sealed class WorkerThreads : IDisposable
{
    private readonly Thread[] _threads;
    private readonly SemaphoreSlim[] _go;
    private readonly CountdownEvent _done;
    private Action<int> _body = static _ => { };

    // Set by the benchmark's thread before it releases the workers for the last time.
    private volatile bool _stopping;

    // The first failure of any worker (or the benchmark thread's timeout); once set, every wait throws.
    private Exception? _failure;

    public WorkerThreads(int count)
    {
        _threads = new Thread[count];
        _go = new SemaphoreSlim[count];
        _done = new CountdownEvent(count);
        for (int i = 0; i < count; i++)
        {
            _go[i] = new SemaphoreSlim(0);
            _threads[i] = new Thread(Loop) { IsBackground = true, Name = $"worker {i}" };
        }
    }

    public int Count => _threads.Length;

    /// <summary>Starts the threads with their body (once, in GlobalSetup).</summary>
    public void Start(Action<int> body)
    {
        _body = body;
        for (int i = 0; i < _threads.Length; i++)
        {
            _threads[i].Start(i);
        }
    }

    /// <summary>One invocation: every thread runs its body once.</summary>
    public void Run()
    {
        _done.Reset(_threads.Length);
        foreach (SemaphoreSlim go in _go)
        {
            go.Release();
        }

        if (!_done.Wait(TimeSpan.FromSeconds(60)))
        {
            Interlocked.CompareExchange(ref _failure, new TimeoutException("The workers did not finish an invocation within 60 s."), null);
            _done.Wait(TimeSpan.FromSeconds(10));
        }

        if (Volatile.Read(ref _failure) is { } failure)
        {
            throw new InvalidOperationException($"A worker failed: {failure.Message}", failure);
        }
    }

    /// <summary>A worker's wait for another thread's progress: spins, then yields (never sleeps a
    /// millisecond, which would dwarf the work); throws once any thread failed.</summary>
    public void Wait(ref SpinWait spin)
    {
        if (Volatile.Read(ref _failure) is not null)
        {
            throw new OperationCanceledException("Another worker failed.");
        }

        spin.SpinOnce(sleep1Threshold: -1);
    }

    public void Dispose()
    {
        _stopping = true;
        foreach (SemaphoreSlim go in _go)
        {
            go.Release();
        }

        foreach (Thread thread in _threads)
        {
            if (thread.IsAlive && !thread.Join(TimeSpan.FromSeconds(10)))
            {
                throw new InvalidOperationException($"{thread.Name} did not stop.");
            }
        }

        foreach (SemaphoreSlim go in _go)
        {
            go.Dispose();
        }

        _done.Dispose();
    }

    private void Loop(object? state)
    {
        int index = (int)state!;
        while (true)
        {
            _go[index].Wait();
            if (_stopping)
            {
                return;
            }

            try
            {
                _body(index);
            }
            catch (Exception e)
            {
                Interlocked.CompareExchange(ref _failure, e, null);
            }
            finally
            {
                _done.Signal();
            }
        }
    }
}

/// <summary>What one call does to a structure on each side of a <see cref="CallPipeline"/>.</summary>
internal interface IPipelineWork
{
    /// <summary>The producing side enters the call (gives it an id, adds it, takes a slot);
    /// <paramref name="previous"/> is the call produced just before on the same ring, still in
    /// (null for a ring's first).</summary>
    void Produce(BenchCall call, BenchCall? previous);

    /// <summary>The consuming side ends the call (removes it, frees its slot).</summary>
    void Consume(BenchCall call);
}

/// <summary>
/// Calls in flight between many threads and one, as on a connection: many callers and one reader
/// loop that takes their answers (<see cref="RunProducer"/> with <see cref="RunAllConsumer"/>), or
/// one reader loop that starts calls and many handlers that finish them (<see cref="RunAllProducer"/>
/// with <see cref="RunConsumer"/>). Each of the many threads has a ring of its calls shared with
/// the one thread, single producer and single consumer.
/// </summary>
/// <remarks>
/// A ring holds at most <c>window</c> calls and its consumer leaves the newest <c>window/2</c> in,
/// as answers come some time after their requests: with 1,024 as the window over all rings,
/// 512 to 1,024 calls are in flight at any moment (as with 1,000 callers), and each is ended by
/// the other side's thread some hundreds of calls after it was entered. An invocation produces and
/// consumes <see cref="PerRing"/> calls on each ring, so every invocation ends with exactly
/// <see cref="InFlightBetweenInvocations"/> calls in, which each suite checks.
/// </remarks>
internal sealed class CallPipeline
{
    /// <summary>Calls in flight at most, over all rings.</summary>
    public const int MaxInFlight = 1024;

    private readonly CallRing[] _rings;
    private readonly WorkerThreads _threads;
    private readonly int _window;
    private readonly int _mask;
    private readonly int _lag;

    // The one thread's progress per ring in the current invocation; only that thread touches it.
    private readonly int[] _done;

    public CallPipeline(int rings, int callsPerInvoke, WorkerThreads threads)
    {
        _window = MaxInFlight / rings; // a power of two: rings is one of 1, 2, 4, 8, 16, 64
        _mask = _window - 1;
        _lag = _window / 2;
        _threads = threads;
        _rings = new CallRing[rings];
        for (int i = 0; i < rings; i++)
        {
            _rings[i] = new CallRing(_window);
        }

        _done = new int[rings];
        PerRing = callsPerInvoke / rings;
    }

    /// <summary>Calls each ring produces and consumes per invocation.</summary>
    public int PerRing { get; }

    /// <summary>Calls in the structure between invocations (and after <see cref="Prime"/>).</summary>
    public int InFlightBetweenInvocations => _lag * _rings.Length;

    /// <summary>Before the first invocation, from one thread: the calls that stay in flight.</summary>
    public void Prime<TWork>(ref TWork work)
        where TWork : struct, IPipelineWork
    {
        foreach (CallRing ring in _rings)
        {
            for (int i = 0; i < _lag; i++)
            {
                long tail = ring.Ends.Tail;
                work.Produce(ring.Calls[tail & _mask], tail == 0 ? null : ring.Calls[(tail - 1) & _mask]);
                ring.Ends.Tail = tail + 1;
            }
        }
    }

    /// <summary>After the last invocation, from one thread: ends every call still in flight.</summary>
    public void Drain<TWork>(ref TWork work)
        where TWork : struct, IPipelineWork
    {
        foreach (CallRing ring in _rings)
        {
            for (long head = ring.Ends.Head; head < ring.Ends.Tail; head++)
            {
                work.Consume(ring.Calls[head & _mask]);
                ring.Ends.Head = head + 1;
            }
        }
    }

    /// <summary>Between invocations: every pooled call, and whether it is in flight (entered and
    /// not yet ended) or out (ended, or never used).</summary>
    public void ForEachCall(Action<BenchCall, bool> check)
    {
        foreach (CallRing ring in _rings)
        {
            for (long i = ring.Ends.Tail - _window; i < ring.Ends.Tail; i++)
            {
                check(ring.Calls[i & _mask], i >= ring.Ends.Head);
            }
        }
    }

    /// <summary>One of many producers (a caller): its ring's calls, waiting while the ring is full.</summary>
    public void RunProducer<TWork>(int index, ref TWork work)
        where TWork : struct, IPipelineWork
    {
        CallRing ring = _rings[index];
        long tail = ring.Ends.Tail;
        long end = tail + PerRing;
        SpinWait spin = default;
        while (tail < end)
        {
            if (tail - Volatile.Read(ref ring.Ends.Head) >= _window)
            {
                _threads.Wait(ref spin);
                continue;
            }

            spin = default;
            work.Produce(ring.Calls[tail & _mask], ring.Calls[(tail - 1) & _mask]);
            Volatile.Write(ref ring.Ends.Tail, ++tail);
        }
    }

    /// <summary>The one consumer (the reader loop taking answers): every ring's calls older than
    /// the newest half window, as they become so.</summary>
    public void RunAllConsumer<TWork>(ref TWork work)
        where TWork : struct, IPipelineWork
    {
        Array.Clear(_done);
        long remaining = (long)PerRing * _rings.Length;
        SpinWait spin = default;
        while (remaining > 0)
        {
            bool progressed = false;
            for (int r = 0; r < _rings.Length; r++)
            {
                CallRing ring = _rings[r];
                long head = ring.Ends.Head;
                long ready = Math.Min(Volatile.Read(ref ring.Ends.Tail) - head - _lag, PerRing - _done[r]);
                if (ready <= 0)
                {
                    continue;
                }

                for (long end = head + ready; head < end; head++)
                {
                    work.Consume(ring.Calls[head & _mask]);
                    Volatile.Write(ref ring.Ends.Head, head + 1);
                }

                _done[r] += (int)ready;
                remaining -= ready;
                progressed = true;
            }

            if (progressed)
            {
                spin = default;
            }
            else
            {
                _threads.Wait(ref spin);
            }
        }
    }

    /// <summary>The one producer (the reader loop starting calls): one call per ring in turn, to
    /// each ring that has room.</summary>
    public void RunAllProducer<TWork>(ref TWork work)
        where TWork : struct, IPipelineWork
    {
        Array.Clear(_done);
        long remaining = (long)PerRing * _rings.Length;
        SpinWait spin = default;
        while (remaining > 0)
        {
            bool progressed = false;
            for (int r = 0; r < _rings.Length; r++)
            {
                CallRing ring = _rings[r];
                long tail = ring.Ends.Tail;
                if (_done[r] == PerRing || tail - Volatile.Read(ref ring.Ends.Head) >= _window)
                {
                    continue;
                }

                work.Produce(ring.Calls[tail & _mask], ring.Calls[(tail - 1) & _mask]);
                Volatile.Write(ref ring.Ends.Tail, tail + 1);
                _done[r]++;
                remaining--;
                progressed = true;
            }

            if (progressed)
            {
                spin = default;
            }
            else
            {
                _threads.Wait(ref spin);
            }
        }
    }

    /// <summary>One of many consumers (a handler finishing calls): its ring's calls older than the
    /// newest half window, waiting while there are none.</summary>
    public void RunConsumer<TWork>(int index, ref TWork work)
        where TWork : struct, IPipelineWork
    {
        CallRing ring = _rings[index];
        long head = ring.Ends.Head;
        long end = head + PerRing;
        SpinWait spin = default;
        while (head < end)
        {
            if (Volatile.Read(ref ring.Ends.Tail) - head <= _lag)
            {
                _threads.Wait(ref spin);
                continue;
            }

            spin = default;
            work.Consume(ring.Calls[head & _mask]);
            Volatile.Write(ref ring.Ends.Head, ++head);
        }
    }

    /// <summary>One ring: its pooled calls, and its two ends on cache lines of their own.</summary>
    private sealed class CallRing(int window)
    {
        public readonly BenchCall[] Calls = CreateCalls(window);

        public RingEnds Ends;

        private static BenchCall[] CreateCalls(int window)
        {
            var calls = new BenchCall[window];
            for (int i = 0; i < window; i++)
            {
                calls[i] = new BenchCall();
            }

            return calls;
        }
    }

    /// <summary>The producer's end (written by it, read by the consumer) and the consumer's, a
    /// padded line apart, so the two threads write different lines.</summary>
    [StructLayout(LayoutKind.Explicit, Size = 256)]
    private struct RingEnds
    {
        [FieldOffset(64)]
        public long Tail;

        [FieldOffset(192)]
        public long Head;
    }
}
