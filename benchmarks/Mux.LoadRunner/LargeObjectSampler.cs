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

    // The full collections started (GCStart events of depth 2), with the runtime's reason code. Under _lock.
    private readonly List<(DateTime At, uint Reason)> _fullCollections = [];

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

    /// <summary>The full collections started between two instants (UTC), as "count × reason" items.</summary>
    public IReadOnlyList<string> DescribeFullCollections(DateTime from, DateTime to)
    {
        var groups = new Dictionary<uint, int>();
        lock (_lock)
        {
            foreach ((DateTime at, uint reason) in _fullCollections)
            {
                if (at >= from && at <= to)
                {
                    groups[reason] = groups.GetValueOrDefault(reason) + 1;
                }
            }
        }

        return [.. groups.OrderByDescending(pair => pair.Value).Select(pair => $"{pair.Value} × {ReasonName(pair.Key)}")];
    }

    // The runtime's GC reason codes (GCStart's Reason field).
    private static string ReasonName(uint reason) => reason switch
    {
        0 => "small-object allocation budget",
        1 => "induced",
        2 => "low memory",
        4 => "large-object allocation budget",
        5 => "out of small-object space",
        6 => "out of large-object space",
        7 => "induced, not forced",
        8 => "stress",
        9 => "low memory (host)",
        _ => $"reason {reason}",
    };

    protected override void OnEventSourceCreated(EventSource eventSource)
    {
        if (eventSource.Name == RuntimeEventSource)
        {
            EnableEvents(eventSource, EventLevel.Verbose, (EventKeywords)GcKeyword);
        }
    }

    protected override void OnEventWritten(EventWrittenEventArgs eventData)
    {
        if (eventData.PayloadNames is null || eventData.Payload is null)
        {
            return;
        }

        if (eventData.EventName?.StartsWith("GCStart", StringComparison.Ordinal) == true)
        {
            int depthIndex = eventData.PayloadNames.IndexOf("Depth");
            int reasonIndex = eventData.PayloadNames.IndexOf("Reason");
            if (depthIndex >= 0 && reasonIndex >= 0 && Convert.ToUInt32(eventData.Payload[depthIndex], CultureInfo.InvariantCulture) == 2)
            {
                uint reason = Convert.ToUInt32(eventData.Payload[reasonIndex], CultureInfo.InvariantCulture);
                lock (_lock)
                {
                    _fullCollections.Add((eventData.TimeStamp.ToUniversalTime(), reason));
                }
            }

            return;
        }

        if (eventData.EventName?.StartsWith("GCAllocationTick", StringComparison.Ordinal) != true)
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
