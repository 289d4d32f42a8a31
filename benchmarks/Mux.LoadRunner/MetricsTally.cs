using System.Diagnostics.Metrics;

namespace Mux.LoadRunner;

/// <summary>
/// --metrics: a <see cref="MeterListener"/> that enables every instrument of the "Mux" meter and
/// adds each measurement to its instrument's running count and sum, the least an exporter does
/// with a measurement before its own aggregation. Each instrument's totals live in one object made
/// when the instrument is published and handed back to the callback as its state, so a
/// measurement costs two interlocked adds and no allocation: what the runner then reports as
/// allocated per call is Mux's telemetry, not the listener. Observable instruments are collected
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

    /// <summary>One instrument's running totals. Instruments are written by whichever threads
    /// measure; the totals are interlocked so that none is lost.</summary>
    private sealed class InstrumentTotals(string name)
    {
        private long _count;
        private long _longSum;
        private double _doubleSum;

        public string Name { get; } = name;

        public long Count => Interlocked.Read(ref _count);

        public double Sum => Volatile.Read(ref _doubleSum) + Interlocked.Read(ref _longSum);

        public void Add(long value)
        {
            Interlocked.Increment(ref _count);
            Interlocked.Add(ref _longSum, value);
        }

        public void Add(double value)
        {
            Interlocked.Increment(ref _count);
            double seen = Volatile.Read(ref _doubleSum);
            while (true)
            {
                double found = Interlocked.CompareExchange(ref _doubleSum, seen + value, seen);
                if (found.Equals(seen))
                {
                    return;
                }

                seen = found;
            }
        }
    }
}
