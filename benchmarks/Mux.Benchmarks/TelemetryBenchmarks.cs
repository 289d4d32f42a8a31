using System.Diagnostics;
using System.Diagnostics.Metrics;
using BenchmarkDotNet.Attributes;
using Mux.Samples.Contracts;

namespace Mux.Benchmarks;

/// <summary>
/// What tracing and metrics cost per call: the same Add call over in-memory pipes as
/// <see cref="CallBenchmarks.Add"/>, with nobody listening to the "Mux" activity source and meter
/// (Listening = false: the cost every user pays) and with a listener that samples every span and
/// takes every measurement (Listening = true: the most a trace-everything setup can add before
/// its exporter's own work). Both the client and the server side run in this process, so each
/// call makes two spans and two duration measurements.
/// </summary>
[MemoryDiagnoser]
[Config(typeof(MuxJobConfig))]
public class TelemetryBenchmarks
{
    private InMemoryConnection _connection = null!;
    private IUserService _proxy = null!;
    private ActivityListener? _activities;
    private MeterListener? _measurements;

    // Counts the spans the listener saw, so that a setup that silently traced nothing is caught.
    private long _spans;

    [Params(false, true)]
    public bool Listening { get; set; }

    [GlobalSetup]
    public void Setup()
    {
        if (Listening)
        {
            _activities = new ActivityListener
            {
                ShouldListenTo = static source => source.Name == "Mux",
                Sample = static (ref ActivityCreationOptions<ActivityContext> _) => ActivitySamplingResult.AllDataAndRecorded,
                ActivityStopped = _ => Interlocked.Increment(ref _spans),
            };
            ActivitySource.AddActivityListener(_activities);
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
            _measurements.SetMeasurementEventCallback<double>(static (_, _, _, _) => { });
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

        SpinWait.SpinUntil(() => !Listening || Interlocked.Read(ref _spans) >= 2, TimeSpan.FromSeconds(5));
        if (Listening && Interlocked.Read(ref _spans) < 2)
        {
            throw new InvalidOperationException("The listener saw no Mux spans: the benchmark would measure nothing.");
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
