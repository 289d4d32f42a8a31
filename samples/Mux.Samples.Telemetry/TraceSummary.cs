using System.Collections.Concurrent;
using System.Diagnostics;
using OpenTelemetry;

namespace Mux.Samples.Telemetry;

/// <summary>
/// An OpenTelemetry processor that keeps the spans that end, to print the trace as a tree once the
/// sample is done and to check that every Mux server span is the child of a Mux client span.
/// </summary>
internal sealed class TraceSummary : BaseProcessor<Activity>
{
    // Spans in the order they ended; added by whatever thread ends one.
    private readonly ConcurrentQueue<Activity> _ended = new();

    public override void OnEnd(Activity data) => _ended.Enqueue(data);

    /// <summary>Prints the spans of <paramref name="traceId"/> as a tree; returns whether each server
    /// span's parent is a client span of the same trace (and there is at least one of each).</summary>
    public bool Print(ActivityTraceId traceId, TextWriter output)
    {
        Activity[] spans = _ended.Where(s => s.TraceId == traceId).ToArray();
        Activity? root = spans.FirstOrDefault(s => s.ParentSpanId == default);
        output.WriteLine($"trace {traceId}: {spans.Length} spans");
        if (root is not null)
        {
            PrintTree(root, spans, output, 1);
        }

        Activity[] servers = spans.Where(s => s.Kind == ActivityKind.Server).ToArray();
        bool ok = servers.Length > 0 && servers.All(server =>
            spans.Any(client => client.Kind == ActivityKind.Client && client.SpanId == server.ParentSpanId));
        output.WriteLine(ok
            ? "one trace across client and server: ok"
            : "one trace across client and server: NOT ok (a server span is not a client span's child)");
        return ok;
    }

    private static void PrintTree(Activity span, Activity[] spans, TextWriter output, int depth)
    {
        output.WriteLine($"{new string(' ', depth * 2)}{span.DisplayName} [{span.Kind}] span {span.SpanId} {span.Duration.TotalMilliseconds:0.###} ms {span.GetTagItem("rpc.response.status_code")}");
        foreach (Activity child in spans.Where(s => s.ParentSpanId == span.SpanId).OrderBy(s => s.StartTimeUtc))
        {
            PrintTree(child, spans, output, depth + 1);
        }
    }
}
