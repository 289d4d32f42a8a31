using System.Runtime.CompilerServices;
using BenchmarkDotNet.Attributes;
using Mux.Connection;

namespace Mux.Benchmarks;

/// <summary>
/// The call cap's free slots under their two real access patterns, with a cap of 1,024 and 512 to
/// 1,024 calls holding a slot (see <see cref="CallPipeline"/>, whose window over all rings is the
/// cap, so slots run out only if a structure loses one): the production <see cref="CallSlots"/>
/// (free slots in per-core stripes) against <see cref="SingleCountCallSlots"/> (one count).
/// </summary>
/// <remarks>
/// <see cref="SlotsCalls"/>, the caller role: <see cref="Threads"/> callers each take a slot and
/// note their home stripe (as OutgoingCalls does), and one reader thread gives each back to that
/// stripe as its answer would. A striped take may miss a slot being given back elsewhere (CallSlots
/// says so); the caller then waits for one as the engine does, through
/// <see cref="CallSlots.WaitAsync"/>, and the misses are written to the log at the end of the case
/// (the single count cannot miss: the case fails if it does).
/// <see cref="SlotsServe"/>, the serving role: one reader thread takes a slot per call and
/// <see cref="Threads"/> handlers give theirs back; a single taker never misses, so a failed take
/// fails the case. One operation is one call; after every invocation the free slots must be
/// exactly the cap less the calls left in flight.
/// </remarks>
[MemoryDiagnoser]
[Config(typeof(CallStructureJobConfig))]
public class CallStructureSlotBenchmarks
{
    private const int CallsPerInvoke = 64 * 1024; // divisible by every Threads value
    private const int Cap = CallPipeline.MaxInFlight;

    private WorkerThreads _threads = null!;
    private CallPipeline _pipeline = null!;
    private Func<int> _free = null!;
    private Action _drain = null!;
    private string _pattern = "";

    // Takes that found no slot and waited for one (the striped slots' misses); any thread adds.
    private readonly StrongBox<long> _misses = new();

    public enum SlotKind
    {
        Striped,
        SingleCount,
    }

    [Params(SlotKind.Striped, SlotKind.SingleCount)]
    public SlotKind Slots { get; set; }

    [Params(1, 2, 4, 8, 16, 64)]
    public int Threads { get; set; }

    [GlobalSetup(Target = nameof(SlotsCalls))]
    public void SetupCalls() => Setup(serve: false);

    [GlobalSetup(Target = nameof(SlotsServe))]
    public void SetupServe() => Setup(serve: true);

    [Benchmark(OperationsPerInvoke = CallsPerInvoke)]
    public void SlotsCalls() => RunAndCheck();

    [Benchmark(OperationsPerInvoke = CallsPerInvoke)]
    public void SlotsServe() => RunAndCheck();

    [GlobalCleanup]
    public void Cleanup()
    {
        Console.WriteLine($"// {_pattern}, {Slots}, {Threads} threads: {_misses.Value} takes found no slot and waited for one.");
        _threads.Dispose();
        _drain();
        if (_free() != Cap)
        {
            throw new InvalidOperationException($"{Slots}: {_free()} slots free after every call gave its slot back, of {Cap}.");
        }
    }

    private void RunAndCheck()
    {
        _threads.Run();
        int free = _free();
        if (free != Cap - _pipeline.InFlightBetweenInvocations)
        {
            throw new InvalidOperationException(
                $"{Slots}: {free} slots free after an invocation, with {_pipeline.InFlightBetweenInvocations} of {Cap} taken.");
        }

        if (Slots == SlotKind.SingleCount && Volatile.Read(ref _misses.Value) != 0)
        {
            throw new InvalidOperationException($"The exact count missed a slot {_misses.Value} times with fewer calls in flight than the cap.");
        }
    }

    private void Setup(bool serve)
    {
        _pattern = serve ? nameof(SlotsServe) : nameof(SlotsCalls);
        if (Slots == SlotKind.Striped)
        {
            var slots = new CallSlots(Cap);
            _free = () => slots.Free;
            Setup(new StripedSlots(slots), serve);
        }
        else
        {
            var slots = new SingleCountCallSlots(Cap);
            _free = () => slots.Free;
            Setup(new SingleSlots(slots), serve);
        }
    }

    private void Setup<TSlots>(TSlots slots, bool serve)
        where TSlots : struct, ISlots
    {
        _threads = new WorkerThreads(Threads + 1);
        _pipeline = new CallPipeline(Threads, CallsPerInvoke, _threads);
        CallPipeline pipeline = _pipeline;
        int many = Threads;
        if (serve)
        {
            var work = new ServeWork<TSlots>(slots);
            pipeline.Prime(ref work);
            _drain = () => pipeline.Drain(ref work);
            _threads.Start(index =>
            {
                ServeWork<TSlots> mine = work;
                if (index < many)
                {
                    pipeline.RunConsumer(index, ref mine);
                }
                else
                {
                    pipeline.RunAllProducer(ref mine);
                }
            });
        }
        else
        {
            var work = new CallsWork<TSlots>(slots, _misses);
            pipeline.Prime(ref work);
            _drain = () => pipeline.Drain(ref work);
            _threads.Start(index =>
            {
                CallsWork<TSlots> mine = work;
                if (index < many)
                {
                    pipeline.RunProducer(index, ref mine);
                }
                else
                {
                    pipeline.RunAllConsumer(ref mine);
                }
            });
        }
    }

    /// <summary>The caller role: a caller takes a slot (waiting when it finds none), the reader
    /// gives it back to the caller's stripe.</summary>
    private readonly struct CallsWork<TSlots>(TSlots slots, StrongBox<long> misses) : IPipelineWork
        where TSlots : struct, ISlots
    {
        public void Produce(BenchCall call, BenchCall? previous)
        {
            if (!slots.TryTake())
            {
                Interlocked.Increment(ref misses.Value);
                slots.Wait();
            }

            call.SlotStripe = slots.HomeStripe;
        }

        public void Consume(BenchCall call) => slots.Release(call.SlotStripe);
    }

    /// <summary>The serving role: the reader takes a slot, a handler gives it back.</summary>
    private readonly struct ServeWork<TSlots>(TSlots slots) : IPipelineWork
        where TSlots : struct, ISlots
    {
        public void Produce(BenchCall call, BenchCall? previous)
        {
            if (!slots.TryTake())
            {
                throw new InvalidOperationException("The only taker found no slot free with fewer calls in flight than the cap.");
            }
        }

        public void Consume(BenchCall call) => slots.Release();
    }

    private interface ISlots
    {
        int HomeStripe { get; }

        bool TryTake();

        /// <summary>The slow path after a failed take: waits for a slot.</summary>
        void Wait();

        void Release();

        void Release(int stripe);
    }

    private readonly struct StripedSlots(CallSlots slots) : ISlots
    {
        public int HomeStripe => slots.HomeStripe;

        public bool TryTake() => slots.TryTake();

        public void Wait() =>
            slots.WaitAsync(TimeSpan.FromSeconds(30), TimeProvider.System, CancellationToken.None).AsTask().GetAwaiter().GetResult();

        public void Release() => slots.Release();

        public void Release(int stripe) => slots.Release(stripe);
    }

    private readonly struct SingleSlots(SingleCountCallSlots slots) : ISlots
    {
        public int HomeStripe => 0;

        public bool TryTake() => slots.TryTake();

        public void Wait() => slots.Wait();

        public void Release() => slots.Release();

        public void Release(int stripe) => slots.Release();
    }
}

/// <summary>
/// The simple call slots: one count of free slots, taken by compare-and-swap and given back by an
/// interlocked increment, which then reads the waiter count (the fence pairing CallSlots has with
/// its waiters). Its waiters spin here, where the engine's would queue: with one exact count no
/// take in this suite should find none, and the suite fails if one does.
/// </summary>
internal sealed class SingleCountCallSlots(int count)
{
    // Free slots, never negative: taken by TryTake's compare-and-swap, given back by Release.
    private int _free = count;

    // Callers in Wait; read by every Release, as in CallSlots.
    private int _waiterCount;

    public int Free => Volatile.Read(ref _free);

    public bool TryTake()
    {
        int seen = Volatile.Read(ref _free);
        while (seen > 0)
        {
            int before = Interlocked.CompareExchange(ref _free, seen - 1, seen);
            if (before == seen)
            {
                return true;
            }

            seen = before;
        }

        return false;
    }

    public void Wait()
    {
        Interlocked.Increment(ref _waiterCount);
        SpinWait spin = default;
        while (!TryTake())
        {
            spin.SpinOnce(sleep1Threshold: -1);
        }

        Interlocked.Decrement(ref _waiterCount);
    }

    public void Release()
    {
        Interlocked.Increment(ref _free);
        if (Volatile.Read(ref _waiterCount) != 0)
        {
            ReleaseToWaiter();
        }
    }

    // Where the engine hands the slot to its oldest waiter; the spinning waiter takes it itself.
    [MethodImpl(MethodImplOptions.NoInlining)]
    private static void ReleaseToWaiter()
    {
    }
}
