using System.Diagnostics.Tracing;
using System.Globalization;

namespace Mux.LoadRunner;

/// <summary>
/// What lands on the large object heap (--loh-events): listens in-process to the runtime's
/// GCAllocationTick events of kind Large. The runtime raises one each time a heap's allocations since
/// the last one pass 100 KB, naming the object that crossed the mark and its size; on the LOH every
/// allocation of 100 KB or more crosses it by itself, so each such array is seen once (arrays of
/// 85-100 KB may be missed). Events arrive on the listener's dispatch thread some milliseconds late,
/// so they are filtered by their own time stamps against the window.
/// </summary>
internal sealed class LargeObjectSampler : EventListener
{
    private const string RuntimeEventSource = "Microsoft-Windows-DotNETRuntime";
    private const long GcKeyword = 0x1;
    private const uint LargeObjectHeap = 1;

    private readonly Lock _lock = new();
    private readonly List<(DateTime At, string Type, long Size)> _events = [];

    /// <summary>The LOH allocations seen between two instants (UTC), as "count × type of size" lines, most bytes first.</summary>
    public IReadOnlyList<string> Describe(DateTime from, DateTime to)
    {
        var groups = new Dictionary<(string Type, long Size), int>();
        lock (_lock)
        {
            foreach ((DateTime at, string type, long size) in _events)
            {
                if (at >= from && at <= to)
                {
                    groups[(type, size)] = groups.GetValueOrDefault((type, size)) + 1;
                }
            }
        }

        return [.. groups.OrderByDescending(pair => pair.Key.Size * pair.Value)
            .Select(pair => string.Create(CultureInfo.InvariantCulture, $"{pair.Value} × {pair.Key.Type} of {pair.Key.Size:N0} B"))];
    }

    protected override void OnEventSourceCreated(EventSource eventSource)
    {
        if (eventSource.Name == RuntimeEventSource)
        {
            EnableEvents(eventSource, EventLevel.Verbose, (EventKeywords)GcKeyword);
        }
    }

    protected override void OnEventWritten(EventWrittenEventArgs eventData)
    {
        if (eventData.EventName?.StartsWith("GCAllocationTick", StringComparison.Ordinal) != true || eventData.PayloadNames is null || eventData.Payload is null)
        {
            return;
        }

        int kindIndex = eventData.PayloadNames.IndexOf("AllocationKind");
        int typeIndex = eventData.PayloadNames.IndexOf("TypeName");
        int sizeIndex = eventData.PayloadNames.IndexOf("ObjectSize");
        if (kindIndex < 0 || typeIndex < 0 || sizeIndex < 0 || Convert.ToUInt32(eventData.Payload[kindIndex], CultureInfo.InvariantCulture) != LargeObjectHeap)
        {
            return;
        }

        string type = eventData.Payload[typeIndex] as string ?? "?";
        long size = Convert.ToInt64(eventData.Payload[sizeIndex], CultureInfo.InvariantCulture);
        lock (_lock)
        {
            _events.Add((eventData.TimeStamp.ToUniversalTime(), type, size));
        }
    }
}
