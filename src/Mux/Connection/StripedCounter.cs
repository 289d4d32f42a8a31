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
    // One stripe per core, up to this many: past it, cores share stripes (a line shared by a few
    // cores is still far from one shared by all).
    private const int MaxStripes = 64;

    // Stripes, each alone on its line (see Stripe). Changed by any thread, on its core's stripe.
    private readonly Stripe[] _stripes;
    private readonly int _mask;

    public StripedCounter()
    {
        int stripes = (int)Math.Min(MaxStripes, System.Numerics.BitOperations.RoundUpToPowerOf2((uint)Environment.ProcessorCount));
        _stripes = new Stripe[stripes];
        _mask = stripes - 1;
    }

    /// <summary>Adds <paramref name="delta"/> on this core's stripe.</summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public void Add(long delta) => Interlocked.Add(ref _stripes[Thread.GetCurrentProcessorId() & _mask].Value, delta);

    /// <summary>Adds one on this core's stripe.</summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public void Increment() => Interlocked.Increment(ref _stripes[Thread.GetCurrentProcessorId() & _mask].Value);

    /// <summary>Takes one on this core's stripe (a stripe may go negative: only the sum means anything).</summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public void Decrement() => Interlocked.Decrement(ref _stripes[Thread.GetCurrentProcessorId() & _mask].Value);

    /// <summary>The count: the sum of the stripes, each read once (exact when nothing changes meanwhile).</summary>
    public long Sum()
    {
        long sum = 0;
        foreach (ref Stripe stripe in _stripes.AsSpan())
        {
            sum += Volatile.Read(ref stripe.Value);
        }

        return sum;
    }

    /// <summary>One core's share, padded to 128 bytes so that no two stripes (nor a stripe and the
    /// array's header) share a cache line or an adjacent-line prefetch pair.</summary>
    [StructLayout(LayoutKind.Explicit, Size = 128)]
    private struct Stripe
    {
        [FieldOffset(64)]
        public long Value;
    }
}
