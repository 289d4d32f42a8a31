using System.Diagnostics.Metrics;

namespace Mux.LoadRunner;

/// <summary>
/// --metrics: a <see cref="MeterListener"/> that enables every instrument of the "Mux" meter and
/// adds each measurement to its instrument's running count and sum, the least an exporter does
/// with a measurement before its own aggregation. Each instrument's totals live in one object made
/// when the instrument is published and handed back to the callback as its state, so a
/// measurement costs two interlocked adds on this core's stripe and no allocation: what the runner
/// then reports as allocated per call is Mux's telemetry, not the listener. Observable instruments are collected
/// once a second, as an exporter with a short interval would.
/// </summary>
internal sealed class MetricsTally : IDisposable
{
    public const string MeterName = "Mux";

    private static readonly TimeSpan s_observeInterval = TimeSpan.FromSeconds(1);

    private readonly MeterListener _listener;
    private readonly Lock _gate = new();
    private readonly List<InstrumentTotals> _instruments = [];
    private readonly Timer _observer;

    private MetricsTally()
    {
        _listener = new MeterListener
        {
            InstrumentPublished = (instrument, listener) =>
            {
                if (instrument.Meter.Name != MeterName)
                {
                    return;
                }

                var totals = new InstrumentTotals(instrument.Name);
                lock (_gate)
                {
                    _instruments.Add(totals);
                }

                listener.EnableMeasurementEvents(instrument, totals);
            },
        };

        // One callback per measurement type Mux's instruments use (long counters and up-down
        // counters, int and double histograms); static, so that no closure is made either.
        _listener.SetMeasurementEventCallback<long>(static (_, value, _, state) => ((InstrumentTotals)state!).Add(value));
        _listener.SetMeasurementEventCallback<int>(static (_, value, _, state) => ((InstrumentTotals)state!).Add(value));
        _listener.SetMeasurementEventCallback<double>(static (_, value, _, state) => ((InstrumentTotals)state!).Add(value));
        _listener.Start();
        _observer = new Timer(static state => ((MeterListener)state!).RecordObservableInstruments(), _listener, s_observeInterval, s_observeInterval);
    }

    /// <summary>The process's tally while --metrics is on; null when it is off.</summary>
    public static MetricsTally? Current { get; private set; }

    /// <summary>Starts listening for the rest of the process's life (both roles call it once, first).</summary>
    public static void Start() => Current ??= new MetricsTally();

    /// <summary>Measurements taken so far, every instrument together; 0 when metrics are off.</summary>
    public static long TotalMeasurements()
    {
        MetricsTally? tally = Current;
        if (tally is null)
        {
            return 0;
        }

        long total = 0;
        lock (tally._gate)
        {
            foreach (InstrumentTotals instrument in tally._instruments)
            {
                total += instrument.Count;
            }
        }

        return total;
    }

    /// <summary>Each enabled instrument's name, measurement count and sum of values so far, by name.</summary>
    public static IReadOnlyList<(string Instrument, long Count, double Sum)> Snapshot()
    {
        MetricsTally? tally = Current;
        if (tally is null)
        {
            return [];
        }

        lock (tally._gate)
        {
            return [.. tally._instruments.Select(i => (i.Name, i.Count, i.Sum)).OrderBy(i => i.Name, StringComparer.Ordinal)];
        }
    }

    public void Dispose()
    {
        _observer.Dispose();
        _listener.Dispose();
    }

    /// <summary>
    /// One instrument's running totals, striped by core: each core's count and sum sit on their own
    /// cache lines, so measurements taken on different cores do not write one shared line (a
    /// listener that did would add a cross-core transfer per measurement, which is the listener's
    /// cost, not Mux's). Interlocked all the same: a thread can move cores between reading its core
    /// number and adding, and two threads can share a core.
    /// </summary>
    private sealed class InstrumentTotals(string name)
    {
        // 16 longs (128 B) apart: two cache lines, for the adjacent-line prefetcher.
        private const int Stride = 16;

        private static readonly int s_stripes = Environment.ProcessorCount;

        private readonly long[] _counts = new long[s_stripes * Stride];
        private readonly long[] _longSums = new long[s_stripes * Stride];
        private readonly double[] _doubleSums = new double[s_stripes * Stride];

        public string Name { get; } = name;

        public long Count
        {
            get
            {
                long total = 0;
                for (int i = 0; i < s_stripes; i++)
                {
                    total += Interlocked.Read(ref _counts[i * Stride]);
                }

                return total;
            }
        }

        public double Sum
        {
            get
            {
                double total = 0;
                for (int i = 0; i < s_stripes; i++)
                {
                    total += Interlocked.Read(ref _longSums[i * Stride]) + Volatile.Read(ref _doubleSums[i * Stride]);
                }

                return total;
            }
        }

        public void Add(long value)
        {
            int slot = Slot();
            Interlocked.Increment(ref _counts[slot]);
            Interlocked.Add(ref _longSums[slot], value);
        }

        public void Add(double value)
        {
            int slot = Slot();
            Interlocked.Increment(ref _counts[slot]);
            ref double sum = ref _doubleSums[slot];
            double seen = Volatile.Read(ref sum);
            while (true)
            {
                double found = Interlocked.CompareExchange(ref sum, seen + value, seen);
                if (found.Equals(seen))
                {
                    return;
                }

                seen = found;
            }
        }

        // Thread.GetCurrentProcessorId is cached per thread by the runtime (a few ns); the unsigned
        // modulo keeps any number it returns (past ProcessorCount with affinity or hot-added
        // cores) inside the arrays.
        private static int Slot() => (int)((uint)Thread.GetCurrentProcessorId() % (uint)s_stripes) * Stride;
    }
}
