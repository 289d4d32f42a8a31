using System.Numerics;
using System.Runtime.CompilerServices;
using System.Runtime.InteropServices;

namespace Mux.Connection;

/// <summary>
/// A count that many threads change at once without sharing a cache line: each change goes to the
/// stripe of the core the thread runs on (<see cref="Thread.GetCurrentProcessorId"/>, cached by the
/// runtime, so a couple of nanoseconds), and a read sums the stripes. Threads on different cores
/// therefore never invalidate each other's line; threads on one core share a stripe, which is why
/// each change is still atomic. Reading costs one line per stripe: meant for counts that are changed
/// per call and read rarely (a drain, statistics, a cap check once per batch).
/// </summary>
/// <remarks>
/// Every change is an interlocked operation (a full fence), and <see cref="Sum"/> reads the stripes
/// after whatever the caller did before: a thread that changes the count and then sums, against
/// another that does the same, cannot both miss each other's change (the Dekker pairing the drain
/// checks rely on, as they did on one interlocked count).
/// </remarks>
internal sealed class StripedCounter
{
    /// <summary>How many stripes a per-core structure has (this counter, the free call slots, the
    /// blocks of call ids): one per core, rounded up to a power of two so that a core's stripe is
    /// its id masked, and at most 64: past that, cores share stripes (a line shared by a few cores
    /// is still far from one shared by all).</summary>
    public static readonly int StripeCount = (int)Math.Min(64, BitOperations.RoundUpToPowerOf2((uint)Environment.ProcessorCount));

    // Changed by any thread, on its core's stripe.
    private readonly CoreStripe[] _stripes = new CoreStripe[StripeCount];
    private readonly int _mask = StripeCount - 1;

    /// <summary>Adds one on this core's stripe.</summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public void Increment() => Interlocked.Increment(ref _stripes[Thread.GetCurrentProcessorId() & _mask].Value);

    /// <summary>Takes one on this core's stripe (a stripe may go negative: only the sum means anything).</summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public void Decrement() => Interlocked.Decrement(ref _stripes[Thread.GetCurrentProcessorId() & _mask].Value);

    /// <summary>The count: the sum of the stripes, each read once (exact when nothing changes meanwhile).</summary>
    public long Sum() => CoreStripe.Sum(_stripes);
}

/// <summary>One core's share of a striped structure (<see cref="StripedCounter.StripeCount"/>),
/// padded to 128 bytes so that no two stripes (nor a stripe and the array's header) share a cache
/// line or an adjacent-line prefetch pair.</summary>
[StructLayout(LayoutKind.Explicit, Size = 128)]
internal struct CoreStripe
{
    [FieldOffset(64)]
    public long Value;

    /// <summary>The sum of <paramref name="stripes"/>, each read once (exact when nothing changes meanwhile).</summary>
    public static long Sum(CoreStripe[] stripes)
    {
        long sum = 0;
        foreach (ref CoreStripe stripe in stripes.AsSpan())
        {
            sum += Volatile.Read(ref stripe.Value);
        }

        return sum;
    }
}
