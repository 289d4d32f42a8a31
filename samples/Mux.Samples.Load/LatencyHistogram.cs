namespace Mux.Samples.Load;

/// <summary>
/// Log-linear latency histogram in microseconds (the HdrHistogram idea, 64 sub-buckets per power of
/// two, so about 1.5% precision). One per caller, so recording never contends; merged at the end.
/// </summary>
internal sealed class LatencyHistogram
{
    private const int SubBucketBits = 6;
    private const int SubBuckets = 1 << SubBucketBits;
    private readonly long[] _counts = new long[SubBuckets * 40];

    public long Count { get; private set; }

    public void Record(long microseconds)
    {
        _counts[IndexOf(Math.Max(0, microseconds))]++;
        Count++;
    }

    public void Add(LatencyHistogram other)
    {
        for (int i = 0; i < _counts.Length; i++)
        {
            _counts[i] += other._counts[i];
        }

        Count += other.Count;
    }

    /// <summary>The smallest recorded value (bucket upper bound) at or above the given percentile.</summary>
    public long Percentile(double percentile)
    {
        if (Count == 0)
        {
            return 0;
        }

        long target = (long)Math.Ceiling(Count * percentile / 100.0);
        long seen = 0;
        for (int i = 0; i < _counts.Length; i++)
        {
            seen += _counts[i];
            if (seen >= target)
            {
                return UpperBoundOf(i);
            }
        }

        return UpperBoundOf(_counts.Length - 1);
    }

    private static int IndexOf(long value)
    {
        if (value < SubBuckets)
        {
            return (int)value;
        }

        int magnitude = 63 - (int)long.LeadingZeroCount(value) - SubBucketBits + 1; // >= 1
        int sub = (int)(value >> magnitude) - SubBuckets / 2; // 0 .. 31 within the upper half
        int index = SubBuckets + ((magnitude - 1) * (SubBuckets / 2)) + sub;
        return Math.Min(index, SubBuckets * 40 - 1);
    }

    private static long UpperBoundOf(int index)
    {
        if (index < SubBuckets)
        {
            return index;
        }

        int magnitude = ((index - SubBuckets) / (SubBuckets / 2)) + 1;
        int sub = (index - SubBuckets) % (SubBuckets / 2) + SubBuckets / 2;
        return ((long)(sub + 1) << magnitude) - 1;
    }
}
