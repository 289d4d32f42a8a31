using System.Collections.Concurrent;
using System.Diagnostics;

namespace Mux.Tests.Diagnostics;

/// <summary>Listens to the "Mux" activity source (recording everything) and collects the spans that
/// stop. Tests pick their own spans out by trace id, since other tests may call at the same time.</summary>
internal sealed class SpanRecorder : IDisposable
{
    private readonly ActivityListener _listener;
    private readonly ConcurrentQueue<Activity> _stopped = new();
    private readonly SemaphoreSlim _changed = new(0);

    public SpanRecorder()
    {
        _listener = new ActivityListener
        {
            ShouldListenTo = static source => source.Name == "Mux",
            Sample = static (ref ActivityCreationOptions<ActivityContext> _) => ActivitySamplingResult.AllDataAndRecorded,
            ActivityStopped = activity =>
            {
                _stopped.Enqueue(activity);
                _changed.Release();
            },
        };
        ActivitySource.AddActivityListener(_listener);
    }

    /// <summary>Waits until <paramref name="count"/> Mux spans of the trace have stopped; fails the
    /// test after <paramref name="patience"/>.</summary>
    public async Task<Activity[]> WaitForSpansAsync(ActivityTraceId traceId, int count, TimeSpan patience)
    {
        using var timeout = new CancellationTokenSource(patience);
        while (true)
        {
            Activity[] spans = _stopped.Where(a => a.TraceId == traceId).ToArray();
            if (spans.Length >= count)
            {
                return spans;
            }

            await _changed.WaitAsync(timeout.Token);
        }
    }

    public void Dispose() => _listener.Dispose();
}
