using System.Numerics;
using System.Runtime.InteropServices;

namespace Mux.Connection;

internal static class StripedCounter
{
    /// <summary>A power of two, so that a core's stripe is its id masked; past 64 cores, cores share stripes.</summary>
    public static readonly int StripeCount = (int)Math.Min(64, BitOperations.RoundUpToPowerOf2((uint)Environment.ProcessorCount));
}

/// <summary>128 bytes, so that no two stripes (nor a stripe and the array's header) share a cache line or a prefetch pair.</summary>
[StructLayout(LayoutKind.Explicit, Size = 128)]
internal struct CoreStripe
{
    [FieldOffset(64)]
    public long Value;

    /// <summary>Each stripe read once: exact when nothing changes meanwhile.</summary>
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
