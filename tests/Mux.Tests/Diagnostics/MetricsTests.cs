using System.Diagnostics.Metrics;
using Microsoft.Extensions.Diagnostics.Metrics.Testing;

namespace Mux.Tests.Diagnostics;

/// <summary>Every instrument of the "Mux" meter, read through MetricCollector after real calls over
/// TCP. One at a time with the tracing tests (the meter is process-wide).</summary>
[Collection(nameof(TelemetryCollection))]
public class MetricsTests
{
    private const string ServiceName = "Mux.Tests.Diagnostics.ITelemetryTestService";
    private const int Calls = 20;

    /// <summary>The instruments this class reads; the test below fails if the meter gains one.</summary>
    private static readonly string[] Instruments =
    [
        "rpc.client.call.duration", "rpc.server.call.duration",
        "mux.client.active_calls", "mux.server.active_calls",
        "mux.client.active_connections", "mux.server.active_connections",
        "mux.outbound.queued_bytes", "mux.flush.frames", "mux.bytes.sent", "mux.bytes.received",
        "mux.frames.sent", "mux.flushes", "mux.frames.received", "mux.reads", "mux.server.calls.overloaded",
    ];

    [Fact]
    public async Task TheMuxMeter_HasExactlyTheInstrumentsTheseTestsRead()
    {
        await using TelemetryHost host = await TelemetryHost.StartAsync(); // Creates every lazily made instrument.
        var published = new HashSet<string>();
        using var listener = new MeterListener
        {
            InstrumentPublished = (instrument, _) =>
            {
                if (instrument.Meter.Name == "Mux")
                {
                    lock (published)
                    {
                        published.Add(instrument.Name);
                    }
                }
            },
        };
        listener.Start();

        Assert.Equal(Instruments.Order(), published.Order());
    }

    [Fact]
    public async Task CallDurations_AreRecordedPerMethodAndStatus_OnClientAndServer()
    {
        using var client = new MetricCollector<double>(null, "Mux", "rpc.client.call.duration");
        using var server = new MetricCollector<double>(null, "Mux", "rpc.server.call.duration");
        await using TelemetryHost host = await TelemetryHost.StartAsync();

        for (int i = 0; i < Calls; i++)
        {
            Assert.Equal(i + 1, await host.Proxy.Add(i, 1));
        }

        await Assert.ThrowsAsync<MuxRemoteException>(() => host.Proxy.Fail("counted"));
        await server.WaitForMeasurementsAsync(Calls + 1, TelemetryHost.Patience);

        foreach (MetricCollector<double> collector in new[] { client, server })
        {
            CollectedMeasurement<double>[] ours = collector.GetMeasurementSnapshot().Where(m => m.ContainsTags("rpc.service")
                && (string?)m.Tags["rpc.service"] == ServiceName).ToArray();
            CollectedMeasurement<double>[] adds = ours.Where(m => (string?)m.Tags["rpc.method"] == "Add").ToArray();
            Assert.Equal(Calls, adds.Length);
            Assert.All(adds, m =>
            {
                Assert.True(m.Value > 0, $"a duration of {m.Value} s");
                Assert.Equal("mux", m.Tags["rpc.system"]);
                Assert.Equal("Ok", m.Tags["rpc.response.status_code"]);
                Assert.False(m.ContainsTags("error.type"));
            });

            // The client says which server instance ran each call; the server has no such tag.
            if (collector == client)
            {
                Assert.All(ours, m => Assert.Equal(host.EndPoint.Port, m.Tags["server.port"]));
                Assert.All(ours, m => Assert.Equal("127.0.0.1", m.Tags["server.address"]));
            }
            else
            {
                Assert.All(ours, m => Assert.False(m.ContainsTags("server.port")));
            }
            CollectedMeasurement<double> failed = Assert.Single(ours, m => (string?)m.Tags["rpc.method"] == "Fail");
            Assert.Equal("HandlerFailed", failed.Tags["rpc.response.status_code"]);
            Assert.True(failed.ContainsTags("error.type"));
        }
    }

    [Fact]
    public async Task ActiveCallsAndConnections_CountWhatIsOpenNow()
    {
        await using TelemetryHost host = await TelemetryHost.StartAsync();
        using var clientCalls = new MetricCollector<int>(null, "Mux", "mux.client.active_calls");
        using var serverCalls = new MetricCollector<int>(null, "Mux", "mux.server.active_calls");
        using var clientConnections = new MetricCollector<int>(null, "Mux", "mux.client.active_connections");
        using var serverConnections = new MetricCollector<int>(null, "Mux", "mux.server.active_connections");

        Task<int> held = host.Proxy.Hold(7);
        await host.Service.HoldStarted.Task.WaitAsync(TelemetryHost.Patience);
        foreach (var collector in new[] { serverCalls, serverConnections })
        {
            collector.RecordObservableInstruments();
            Assert.True(collector.LastMeasurement?.Value >= 1, $"{collector.Instrument?.Name} read {collector.LastMeasurement?.Value}");
        }

        // The client's instruments count per server instance (server.address, server.port): this
        // host's client has one connection to its server and the one held call on it.
        foreach ((MetricCollector<int> collector, int expected) in new[] { (clientCalls, 1), (clientConnections, 1) })
        {
            collector.RecordObservableInstruments();
            CollectedMeasurement<int> ours = Assert.Single(collector.GetMeasurementSnapshot(), m => m.ContainsTags("server.port")
                && (int?)m.Tags["server.port"] == host.EndPoint.Port);
            Assert.Equal(expected, ours.Value);
            Assert.Equal("127.0.0.1", ours.Tags["server.address"]);
        }

        int callsWhileHeld = serverCalls.LastMeasurement!.Value;
        host.Service.Gate.TrySetResult();
        Assert.Equal(7, await held.WaitAsync(TelemetryHost.Patience));
        // The server counts the call until its handler has finished, which may be a moment after
        // the client has read the response.
        await Mux.Tests.Infrastructure.Hosts.WaitUntilAsync(
            () =>
            {
                serverCalls.RecordObservableInstruments();
                return serverCalls.LastMeasurement!.Value == callsWhileHeld - 1;
            },
            "the server to count the finished call out");
    }

    [Fact]
    public async Task TransportInstruments_CountTheBytesAndFramesOfCalls()
    {
        using var sent = new MetricCollector<long>(null, "Mux", "mux.bytes.sent");
        using var received = new MetricCollector<long>(null, "Mux", "mux.bytes.received");
        using var framesPerFlush = new MetricCollector<int>(null, "Mux", "mux.flush.frames");
        using var framesSent = new MetricCollector<long>(null, "Mux", "mux.frames.sent");
        using var flushes = new MetricCollector<long>(null, "Mux", "mux.flushes");
        using var framesReceived = new MetricCollector<long>(null, "Mux", "mux.frames.received");
        using var reads = new MetricCollector<long>(null, "Mux", "mux.reads");
        using var queued = new MetricCollector<long>(null, "Mux", "mux.outbound.queued_bytes");
        await using TelemetryHost host = await TelemetryHost.StartAsync();

        for (int i = 0; i < Calls; i++)
        {
            await host.Proxy.Add(i, i);
        }

        // Each Add request is at least 17 bytes on the wire and its response at least 11, and each
        // crosses the connection once in each direction (sent by one side, received by the other).
        const long MinimumBytes = Calls * (17 + 11);
        Assert.True(Sum(sent) >= MinimumBytes, $"{Sum(sent)} bytes sent");
        Assert.True(Sum(received) >= MinimumBytes, $"{Sum(received)} bytes received");
        Assert.True(Sum(framesSent) >= 2 * Calls, $"{Sum(framesSent)} frames sent");
        Assert.True(Sum(framesReceived) >= 2 * Calls, $"{Sum(framesReceived)} frames received");
        Assert.True(Sum(flushes) >= 1 && Sum(reads) >= 1);
        Assert.NotEmpty(framesPerFlush.GetMeasurementSnapshot());
        Assert.All(framesPerFlush.GetMeasurementSnapshot(), m => Assert.True(m.Value >= 1, $"a flush of {m.Value} frames"));
        Assert.True(framesPerFlush.GetMeasurementSnapshot().Sum(m => (long)m.Value) >= 2 * Calls);

        queued.RecordObservableInstruments();
        IReadOnlyList<CollectedMeasurement<long>> sides = queued.GetMeasurementSnapshot();
        Assert.Equal(["client", "server"], sides.Select(m => (string)m.Tags["mux.side"]!).Order());
        Assert.All(sides, m => Assert.True(m.Value >= 0));
    }

    [Fact]
    public async Task AClientOverSeveralInstances_ReportsConnectionsAndCallDurationsPerInstance()
    {
        using var durations = new MetricCollector<double>(null, "Mux", "rpc.client.call.duration");
        using var connections = new MetricCollector<int>(null, "Mux", "mux.client.active_connections");
        await using Mux.Tests.Client.Balancing.BalanceCluster cluster = await Mux.Tests.Client.Balancing.BalanceCluster.StartAsync(3);
        await using MuxClient client = await MuxClient.ConnectAsync(cluster.ClientOptions()).WaitAsync(TelemetryHost.Patience);
        await Mux.Tests.Infrastructure.Hosts.WaitUntilAsync(
            () => client.GetEndPointStatistics().All(e => e.State == MuxClientState.Connected),
            "every instance is connected");
        var probe = client.CreateProxy<Mux.Tests.Client.Balancing.IBalanceProbe>();
        for (int i = 0; i < 300; i++)
        {
            Assert.Equal(i, await probe.Serve(i));
        }

        connections.RecordObservableInstruments();
        int[] ports = [.. cluster.EndPoints.Select(e => e.Port).Order()];
        IReadOnlyList<CollectedMeasurement<int>> open = connections.GetMeasurementSnapshot();
        Assert.Equal(ports, open.Where(m => m.ContainsTags("server.port") && ports.Contains((int)m.Tags["server.port"]!)).Select(m => (int)m.Tags["server.port"]!).Order());
        Assert.All(open.Where(m => m.ContainsTags("server.port") && ports.Contains((int)m.Tags["server.port"]!)), m => Assert.Equal(1, m.Value));

        // Every call is counted under the instance that ran it, and the counts add up to the calls
        // each instance served. (The meter is process-wide: balancing tests running at the same
        // time call Serve on instances of their own, on other ports.)
        CollectedMeasurement<double>[] serves = durations.GetMeasurementSnapshot()
            .Where(m => (string?)m.Tags["rpc.method"] == "Serve" && m.ContainsTags("server.port") && ports.Contains((int)m.Tags["server.port"]!))
            .ToArray();
        Assert.Equal(300, serves.Length);
        for (int i = 0; i < ports.Length; i++)
        {
            int port = cluster.EndPoints[i].Port;
            Assert.Equal(cluster.Probes[i].Served, serves.Count(m => (int?)m.Tags["server.port"] == port));
        }
    }

    private static long Sum(MetricCollector<long> collector) => collector.GetMeasurementSnapshot().Sum(m => m.Value);
}
