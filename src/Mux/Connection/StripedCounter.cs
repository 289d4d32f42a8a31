using System.Numerics;
using System.Runtime.InteropServices;

namespace Mux.Connection;

/// <summary>The stripe count of the per-core structures (the free call slots, the blocks of call ids).</summary>
internal static class StripedCounter
{
    /// <summary>One stripe per core, rounded up to a power of two so that a core's stripe is its id masked, and at most
    /// 64: past that, cores share stripes.</summary>
    public static readonly int StripeCount = (int)Math.Min(64, BitOperations.RoundUpToPowerOf2((uint)Environment.ProcessorCount));
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
