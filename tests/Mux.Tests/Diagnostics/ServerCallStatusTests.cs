using Microsoft.Extensions.Diagnostics.Metrics.Testing;
using Microsoft.Extensions.Time.Testing;

namespace Mux.Tests.Diagnostics;

/// <summary>A contract only <see cref="ServerCallStatusTests"/> calls, so that the measurements it
/// reads cannot come from tests running in parallel.</summary>
[MuxService]
public interface IServerCallStatusService
{
    /// <summary>Waits until its token fires, then throws OperationCanceledException.</summary>
    Task WaitForToken(CancellationToken cancellationToken = default);
}

public sealed class ServerCallStatusService : IServerCallStatusService
{
    /// <summary>Completes when WaitForToken has its token.</summary>
    public TaskCompletionSource Waiting { get; } = new(TaskCreationOptions.RunContinuationsAsynchronously);

    public Task WaitForToken(CancellationToken cancellationToken)
    {
        Waiting.TrySetResult();
        return Task.Delay(Timeout.Infinite, cancellationToken);
    }
}

/// <summary>A served call's rpc.response.status_code is the status its caller was told.</summary>
[Collection(nameof(TelemetryCollection))]
public class ServerCallStatusTests
{
    [Fact]
    public async Task HandlerStoppedAtItsDeadline_IsMeasuredAsDeadlineExceeded_AsItsErrorFrameSays()
    {
        using var durations = new MetricCollector<double>(null, "Mux", "rpc.server.call.duration");

        // The server's clock is moved by hand; the caller's 30 s never pass in real time, so only the
        // deadline the Request carried stops the handler (a Cancel from the caller would make it Canceled).
        var clock = new FakeTimeProvider();
        var service = new ServerCallStatusService();
        await using var server = new MuxServer(new MuxServerOptions { TimeProvider = clock, KeepAliveInterval = Timeout.InfiniteTimeSpan });
        server.AddService<IServerCallStatusService>(service);
        await using MuxClient client = await server.ConnectInMemoryAsync(new MuxClientOptions { CallTimeout = TimeSpan.FromSeconds(30) });

        Task call = client.CreateProxy<IServerCallStatusService>().WaitForToken();
        await service.Waiting.Task.WaitAsync(TimeSpan.FromSeconds(15));
        clock.Advance(TimeSpan.FromSeconds(30));

        // The server answers DeadlineExceeded; the client reports it as its own timeout.
        await Assert.ThrowsAsync<TimeoutException>(() => call.WaitAsync(TimeSpan.FromSeconds(15)));

        CollectedMeasurement<double> measured = await WaitForOursAsync(durations);
        Assert.Equal("DeadlineExceeded", measured.Tags["rpc.response.status_code"]);
        Assert.Equal(typeof(TaskCanceledException).FullName, measured.Tags["error.type"]);
    }

    /// <summary>The server's measurement of this test's call: the collector also sees the calls of
    /// tests running in parallel.</summary>
    private static async Task<CollectedMeasurement<double>> WaitForOursAsync(MetricCollector<double> durations)
    {
        using var patience = new CancellationTokenSource(TimeSpan.FromSeconds(15));
        while (true)
        {
            IReadOnlyList<CollectedMeasurement<double>> all = durations.GetMeasurementSnapshot();
            CollectedMeasurement<double>? ours = all.FirstOrDefault(m => m.ContainsTags("rpc.service")
                && (string?)m.Tags["rpc.service"] == typeof(IServerCallStatusService).FullName);
            if (ours is not null)
            {
                return ours;
            }

            await durations.WaitForMeasurementsAsync(all.Count + 1, patience.Token);
        }
    }
}
