using System.Diagnostics;

namespace Mux.Tests.Diagnostics;

/// <summary>A contract only the telemetry tests call, so that the spans and measurements they read
/// (tagged with this service's name) cannot come from tests running in parallel.</summary>
[MuxService]
public interface ITelemetryTestService
{
    ValueTask<int> Add(int a, int b);

    Task Fail(string message);

    /// <summary>Returns the trace id and parent span id of Activity.Current inside the handler.</summary>
    Task<string> CurrentActivity();

    /// <summary>Waits until the test releases <see cref="TelemetryTestService.Gate"/>.</summary>
    Task<int> Hold(int value);
}

public sealed class TelemetryTestService : ITelemetryTestService
{
    /// <summary>Completed by the test to let Hold calls return.</summary>
    public TaskCompletionSource Gate { get; } = new(TaskCreationOptions.RunContinuationsAsynchronously);

    /// <summary>Completes when a Hold call has started.</summary>
    public TaskCompletionSource HoldStarted { get; } = new(TaskCreationOptions.RunContinuationsAsynchronously);

    public ValueTask<int> Add(int a, int b) => new(a + b);

    public Task Fail(string message) => throw new InvalidOperationException(message);

    public Task<string> CurrentActivity()
    {
        Activity? current = Activity.Current;
        return Task.FromResult(current is null ? "none" : $"{current.TraceId}/{current.SpanId}/{current.OperationName}");
    }

    public async Task<int> Hold(int value)
    {
        HoldStarted.TrySetResult();
        await Gate.Task.WaitAsync(TimeSpan.FromSeconds(30));
        return value;
    }
}
