using System.Runtime.CompilerServices;
using System.Runtime.InteropServices;
using Mux.Connection;

namespace Mux.Benchmarks;

/// <summary>
/// A per-core count, kept to compare against the one interlocked int the engine's <see cref="CallTable{TCall}"/> counts
/// with (<see cref="CallStructureCountBenchmarks"/>).
/// A count that many threads change at once without sharing a cache line: each change goes to the
/// stripe of the core the thread runs on (<see cref="Thread.GetCurrentProcessorId"/>, cached by the
/// runtime, so a couple of nanoseconds), and a read sums the stripes. Threads on different cores
/// therefore never invalidate each other's line; threads on one core share a stripe, which is why
/// each change is still atomic. Reading costs two reads of one line per stripe: meant for counts that
/// are changed per call and read rarely (a drain, statistics, a cap check once per batch).
/// </summary>
/// <remarks>
/// <para>
/// A stripe keeps two counts that only grow, what was added and what was taken on it, and
/// <see cref="Sum"/> reads every stripe's taken before any stripe's added. (A single signed value per
/// stripe, summed a stripe at a time, reads low when an add lands on a stripe already summed and its
/// take on one not yet summed: a drain check would see 0 with a call still in.) Read this way, every take the sum sees comes after its add (a call is counted before it can
/// be removed), which the later reads of the added counts then see too: the sum never misses
/// something that was counted before it began and not taken before it ended. It may read high
/// (an add it sees whose take it missed), as if it had read a moment later.
/// </para>
/// <para>
/// Every change is an interlocked operation (a full fence), and <see cref="Sum"/> reads the stripes
/// after whatever the caller did before: a thread that changes the count and then sums, against
/// another that does the same, cannot both miss each other's change (the Dekker pairing the drain
/// checks rely on, as they did on one interlocked count).
/// </para>
/// </remarks>
internal sealed class CoreStripedCounter
{
    // Changed by any thread, on its core's stripe; each count only grows.
    private readonly CounterStripe[] _stripes = new CounterStripe[StripedCounter.StripeCount];
    private readonly int _mask = StripedCounter.StripeCount - 1;

    /// <summary>Adds one on this core's stripe.</summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public void Increment() => Interlocked.Increment(ref _stripes[Thread.GetCurrentProcessorId() & _mask].Added);

    /// <summary>Takes one on this core's stripe: one added before (on any stripe), never more.</summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public void Decrement() => Interlocked.Increment(ref _stripes[Thread.GetCurrentProcessorId() & _mask].Taken);

    /// <summary>The count: never less than what was added before this began and not taken before it
    /// ended (see remarks); exact when nothing changes meanwhile. Reads each stripe's line twice.</summary>
    public long Sum()
    {
        long taken = 0;
        foreach (ref CounterStripe stripe in _stripes.AsSpan())
        {
            taken += Volatile.Read(ref stripe.Taken);
        }

        // Volatile reads are not moved before earlier ones: every add read here is read after the takes above.
        long added = 0;
        foreach (ref CounterStripe stripe in _stripes.AsSpan())
        {
            added += Volatile.Read(ref stripe.Added);
        }

        return added - taken;
    }

    /// <summary>One core's counts, padded to 128 bytes as <see cref="CoreStripe"/> is.</summary>
    [StructLayout(LayoutKind.Explicit, Size = 128)]
    private struct CounterStripe
    {
        [FieldOffset(64)]
        public long Added;

        [FieldOffset(72)]
        public long Taken;
    }
}
