using System.Diagnostics;
using System.Diagnostics.Metrics;
using BenchmarkDotNet.Attributes;
using Mux.Samples.Contracts;

namespace Mux.Benchmarks;

/// <summary>What listens to the "Mux" activity source and meter in <see cref="TelemetryBenchmarks"/>.</summary>
public enum TelemetryListener
{
    /// <summary>Nobody: the cost every user pays.</summary>
    None,

    /// <summary>A MeterListener that takes every measurement of the "Mux" meter, no tracing: what a
    /// metrics exporter adds before its own work (issue 24: within 10% of None, 0 B per call).</summary>
    Metrics,

    /// <summary>That, plus an ActivityListener that samples and records every span.</summary>
    TracesAndMetrics,
}

/// <summary>
/// What tracing and metrics cost per call: the same Add call over in-memory pipes as
/// <see cref="CallBenchmarks.Add"/>, with nobody listening to the "Mux" activity source and meter
/// (the cost every user pays), with a meter listener only, and with a listener that also samples
/// every span (the most a trace-everything setup can add before its exporter's own work). Both the
/// client and the server side run in this process, so each call makes two duration measurements
/// and, traced, two spans.
/// </summary>
[MemoryDiagnoser]
[Config(typeof(MuxJobConfig))]
public class TelemetryBenchmarks
{
    private InMemoryConnection _connection = null!;
    private IUserService _proxy = null!;
    private ActivityListener? _activities;
    private MeterListener? _measurements;

    // Counts the spans and duration measurements the listeners saw, so that a setup that silently
    // observed nothing is caught.
    private long _spans;
    private long _durations;

    [Params(TelemetryListener.None, TelemetryListener.Metrics, TelemetryListener.TracesAndMetrics)]
    public TelemetryListener Listener { get; set; }

    [GlobalSetup]
    public void Setup()
    {
        if (Listener == TelemetryListener.TracesAndMetrics)
        {
            _activities = new ActivityListener
            {
                ShouldListenTo = static source => source.Name == "Mux",
                Sample = static (ref ActivityCreationOptions<ActivityContext> _) => ActivitySamplingResult.AllDataAndRecorded,
                ActivityStopped = _ => Interlocked.Increment(ref _spans),
            };
            ActivitySource.AddActivityListener(_activities);
        }

        if (Listener != TelemetryListener.None)
        {
            _measurements = new MeterListener
            {
                InstrumentPublished = static (instrument, listener) =>
                {
                    if (instrument.Meter.Name == "Mux")
                    {
                        listener.EnableMeasurementEvents(instrument);
                    }
                },
            };
            _measurements.SetMeasurementEventCallback<double>((_, _, _, _) => Interlocked.Increment(ref _durations));
            _measurements.SetMeasurementEventCallback<long>(static (_, _, _, _) => { });
            _measurements.SetMeasurementEventCallback<int>(static (_, _, _, _) => { });
            _measurements.Start();
        }

        _connection = InMemoryConnection.StartAsync().GetAwaiter().GetResult();
        _proxy = _connection.Proxy;
        if (_proxy.Add(1, 2).AsTask().GetAwaiter().GetResult() != 3)
        {
            throw new InvalidOperationException("The in-memory connection does not answer correctly.");
        }

        bool traced = Listener == TelemetryListener.TracesAndMetrics;
        bool measured = Listener != TelemetryListener.None;
        SpinWait.SpinUntil(() => (!traced || Interlocked.Read(ref _spans) >= 2) && (!measured || Interlocked.Read(ref _durations) >= 2), TimeSpan.FromSeconds(5));
        if (traced && Interlocked.Read(ref _spans) < 2)
        {
            throw new InvalidOperationException("The listener saw no Mux spans: the benchmark would measure nothing.");
        }

        if (measured && Interlocked.Read(ref _durations) < 2)
        {
            throw new InvalidOperationException("The meter listener saw no Mux call durations: the benchmark would measure nothing.");
        }
    }

    [GlobalCleanup]
    public void Cleanup()
    {
        _connection.DisposeAsync().AsTask().GetAwaiter().GetResult();
        _activities?.Dispose();
        _measurements?.Dispose();
    }

    /// <summary>One Add call, awaited before the next.</summary>
    [Benchmark]
    public ValueTask<int> Add() => _proxy.Add(1, 2);
}
