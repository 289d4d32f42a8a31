namespace Mux.LoadRunner;

/// <summary>
/// Latencies in 100-ns ticks, counted in log-linear buckets: exact below 64 ticks (6.4 µs), then
/// 32 buckets per power of two (each about 3% wide). Each caller owns one, so recording is a
/// plain increment; the orchestrator merges them after the window.
/// </summary>
internal sealed class LatencyHistogram
{
    private const int LinearBits = 6;
    private const int Linear = 1 << LinearBits;           // 64 exact buckets: 0..63 ticks
    private const int PerOctave = Linear / 2;             // 32 buckets per doubling above that
    private const int Octaves = 34;                       // up to 2^40 ticks, far beyond any call
    private const int BucketCount = Linear + (Octaves * PerOctave);

    private readonly long[] _buckets = new long[BucketCount];

    public long Count { get; private set; }

    public long MaxTicks { get; private set; }

    public void Record(long ticks)
    {
        if (ticks < 0)
        {
            ticks = 0;
        }

        _buckets[BucketOf(ticks)]++;
        Count++;
        if (ticks > MaxTicks)
        {
            MaxTicks = ticks;
        }
    }

    public void Merge(LatencyHistogram other)
    {
        for (int i = 0; i < BucketCount; i++)
        {
            _buckets[i] += other._buckets[i];
        }

        Count += other.Count;
        MaxTicks = Math.Max(MaxTicks, other.MaxTicks);
    }

    /// <summary>The latency at <paramref name="percentile"/> (0-100) in microseconds: the upper
    /// edge of the bucket that holds that rank, so it never understates.</summary>
    public double PercentileMicroseconds(double percentile)
    {
        if (Count == 0)
        {
            return 0;
        }

        long rank = Math.Max(1, (long)Math.Ceiling(Count * percentile / 100.0));
        long seen = 0;
        for (int i = 0; i < BucketCount; i++)
        {
            seen += _buckets[i];
            if (seen >= rank)
            {
                return Math.Min(HighestTicksOf(i), MaxTicks) / 10.0;
            }
        }

        return MaxTicks / 10.0;
    }

    private static int BucketOf(long ticks)
    {
        if (ticks < Linear)
        {
            return (int)ticks;
        }

        // ticks has (msb + 1) significant bits; keep its top LinearBits bits (32..63 after the shift).
        int msb = 63 - (int)long.LeadingZeroCount(ticks);
        int shift = msb - LinearBits + 1;                        // >= 1
        int top = (int)(ticks >> shift);                         // PerOctave .. Linear-1
        int bucket = Linear + ((shift - 1) * PerOctave) + (top - PerOctave);
        return Math.Min(bucket, BucketCount - 1);
    }

    private static long HighestTicksOf(int bucket)
    {
        if (bucket < Linear)
        {
            return bucket;
        }

        int shift = ((bucket - Linear) / PerOctave) + 1;
        int top = ((bucket - Linear) % PerOctave) + PerOctave;
        return ((long)(top + 1) << shift) - 1;
    }
}
