using BenchmarkDotNet.Attributes;
using Mux.Connection;

namespace Mux.Benchmarks;

/// <summary>
/// Call ids from <see cref="Threads"/> threads at once: per-core blocks (<see cref="CoreIdBlocks"/>,
/// the caller role's numbering) against one <see cref="Interlocked.Increment(ref uint)"/>. One
/// operation is one id, with nothing between ids: the most contention either can see.
/// </summary>
/// <remarks>
/// Each thread tallies the ids it took (count, sum, xor); after every invocation the tallies plus
/// the ids still unused in the blocks must equal the ids 1 to the last handed out, each once, and
/// no id may be 0, or the case fails.
/// </remarks>
[MemoryDiagnoser]
[Config(typeof(CallStructureJobConfig))]
public class CallStructureIdBenchmarks
{
    private const int IdsPerInvoke = 256 * 1024; // divisible by every Threads value

    private WorkerThreads _threads = null!;
    private IdTally[] _tallies = [];
    private Func<(ulong Count, ulong Sum, ulong Xor)> _expected = null!;

    public enum IdKind
    {
        CoreBlocks,
        Increment,
    }

    [Params(IdKind.CoreBlocks, IdKind.Increment)]
    public IdKind Ids { get; set; }

    [Params(1, 2, 4, 8, 16, 64)]
    public int Threads { get; set; }

    [GlobalSetup]
    public void Setup()
    {
        _threads = new WorkerThreads(Threads);
        _tallies = new IdTally[Threads];
        if (Ids == IdKind.CoreBlocks)
        {
            var blocks = new CoreIdBlocks();
            _expected = blocks.Handed;
            Start(new BlockIds(blocks));
        }
        else
        {
            var counter = new IncrementIds();
            _expected = counter.Handed;
            Start(new CounterIds(counter));
        }
    }

    [Benchmark(OperationsPerInvoke = IdsPerInvoke)]
    public void NextId()
    {
        _threads.Run();
        (ulong count, ulong sum, ulong xor) = _expected();
        ulong takenCount = 0, takenSum = 0, takenXor = 0;
        foreach (IdTally tally in _tallies)
        {
            takenCount += tally.Count;
            takenSum += tally.Sum;
            takenXor ^= tally.Xor;
        }

        if (takenCount != count || takenSum != sum || takenXor != xor)
        {
            throw new InvalidOperationException(
                $"{Ids}: the threads took {takenCount} ids (sum {takenSum}, xor {takenXor}); {count} distinct ones were handed out ({sum}, {xor}).");
        }
    }

    [GlobalCleanup]
    public void Cleanup() => _threads.Dispose();

    private void Start<TIds>(TIds ids)
        where TIds : struct, IIdSource
    {
        IdTally[] tallies = _tallies;
        int perThread = IdsPerInvoke / Threads;
        _threads.Start(index =>
        {
            ref IdTally tally = ref tallies[index];
            ulong count = tally.Count, sum = tally.Sum, xor = tally.Xor;
            for (int i = 0; i < perThread; i++)
            {
                uint id = ids.Next();
                if (id == 0)
                {
                    throw new InvalidOperationException("Id 0 was handed out; it is the connection's.");
                }

                count++;
                sum += id;
                xor ^= id;
            }

            tally = new IdTally(count, sum, xor);
        });
    }

    private interface IIdSource
    {
        uint Next();
    }

    private readonly struct BlockIds(CoreIdBlocks blocks) : IIdSource
    {
        public uint Next() => blocks.Next();
    }

    private readonly struct CounterIds(IncrementIds counter) : IIdSource
    {
        public uint Next() => counter.Next();
    }

    /// <summary>What one thread took over the case: written by it at the end of each invocation.</summary>
    private readonly record struct IdTally(ulong Count, ulong Sum, ulong Xor);
}

/// <summary>
/// The caller role's call ids (OutgoingCalls.NextCallId, which is private, rebuilt here step for
/// step): each core takes ids from a block of 64 of its own, packed with the block's end in one
/// long so that one compare-and-swap takes an id, and takes a new block from the shared counter
/// when its block runs out. 0 is skipped.
/// </summary>
internal sealed class CoreIdBlocks
{
    private const uint BlockSize = 64;

    // How many ids the blocks handed out so far hold, the last of them the low 32 bits.
    private long _lastCallId;

    // Set once the ids have come round; kept for the per-block check the engine makes.
    private volatile bool _idsCameRound;

    // Each core's block: next id (low 32 bits) and end (high 32 bits, exclusive).
    private readonly CoreStripe[] _blocks = new CoreStripe[StripedCounter.StripeCount];

    public uint Next()
    {
        ref long block = ref _blocks[Thread.GetCurrentProcessorId() & (StripedCounter.StripeCount - 1)].Value;
        while (true)
        {
            long current = Volatile.Read(ref block);
            uint next = (uint)current;
            uint end = (uint)(current >> 32);
            if (next == end)
            {
                long last = Interlocked.Add(ref _lastCallId, BlockSize);
                if (last > uint.MaxValue && !_idsCameRound)
                {
                    _idsCameRound = true;
                }

                next = (uint)last - BlockSize + 1;
                end = next + BlockSize;
            }

            if (Interlocked.CompareExchange(ref block, ((long)end << 32) | (next + 1), current) != current)
            {
                continue;
            }

            if (next != 0)
            {
                return next;
            }
        }
    }

    /// <summary>The ids handed out so far: 1 to the last block's end, less what the blocks still
    /// hold. Only while no thread takes an id (and before the ids come round).</summary>
    public (ulong Count, ulong Sum, ulong Xor) Handed()
    {
        ulong last = (ulong)Volatile.Read(ref _lastCallId);
        (ulong count, ulong sum, ulong xor) = UpTo(last);
        foreach (CoreStripe stripe in _blocks)
        {
            for (uint id = (uint)stripe.Value; id != (uint)(stripe.Value >> 32); id++)
            {
                count--;
                sum -= id;
                xor ^= id;
            }
        }

        return (count, sum, xor);
    }

    /// <summary>The count, sum and xor of the ids 1 to <paramref name="last"/>.</summary>
    public static (ulong Count, ulong Sum, ulong Xor) UpTo(ulong last)
    {
        if (last > uint.MaxValue)
        {
            throw new InvalidOperationException("The ids came round within one case: the check needs them not to.");
        }

        ulong sum = last % 2 == 0 ? last / 2 * (last + 1) : (last + 1) / 2 * last;
        ulong xor = (last % 4) switch
        {
            0 => last,
            1 => 1,
            2 => last + 1,
            _ => 0,
        };
        return (last, sum, xor);
    }
}

/// <summary>The simple ids: one shared counter, incremented per call, skipping 0.</summary>
internal sealed class IncrementIds
{
    // The last id handed out.
    private uint _last;

    public uint Next()
    {
        uint id;
        do
        {
            id = Interlocked.Increment(ref _last);
        }
        while (id == 0);

        return id;
    }

    /// <summary>The ids handed out so far: 1 to the last. Only while no thread takes an id.</summary>
    public (ulong Count, ulong Sum, ulong Xor) Handed()
    {
        return CoreIdBlocks.UpTo(Volatile.Read(ref _last));
    }
}
