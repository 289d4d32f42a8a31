using System.Diagnostics.Tracing;

namespace Mux.Benchmarks.AllocationProbe;

/// <summary>
/// Names what is allocated: listens in-process to the runtime's GCAllocationTick event, which
/// fires about once per 100 KB allocated and names the type of the object that crossed the mark,
/// with the bytes allocated since the previous one. Summed per type, that is a sampled profile of
/// the bytes by type. The listener's own event objects can appear in it too.
/// </summary>
internal sealed class AllocationSampler : EventListener
{
    private const string RuntimeEventSource = "Microsoft-Windows-DotNETRuntime";
    private const long GcKeyword = 0x1;

    private readonly Lock _lock = new();
    private readonly Dictionary<string, long> _bytesByType = new(StringComparer.Ordinal);

    /// <summary>The sampled bytes by type name, largest first.</summary>
    public IReadOnlyList<(string Type, long Bytes)> Snapshot()
    {
        lock (_lock)
        {
            return [.. _bytesByType.Select(pair => (pair.Key, pair.Value)).OrderByDescending(entry => entry.Value)];
        }
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

        int typeIndex = eventData.PayloadNames.IndexOf("TypeName");
        int amountIndex = eventData.PayloadNames.IndexOf("AllocationAmount64");
        if (amountIndex < 0)
        {
            amountIndex = eventData.PayloadNames.IndexOf("AllocationAmount");
        }

        if (typeIndex < 0 || amountIndex < 0)
        {
            return;
        }

        string type = eventData.Payload[typeIndex] as string ?? "?";
        int sizeIndex = eventData.PayloadNames.IndexOf("ObjectSize");
        if (sizeIndex >= 0 && type.EndsWith("[]", StringComparison.Ordinal))
        {
            // Arrays come in many sizes; the size tells a pooled buffer from a result array.
            type += $" of {eventData.Payload[sizeIndex]} B";
        }

        long amount = Convert.ToInt64(eventData.Payload[amountIndex], System.Globalization.CultureInfo.InvariantCulture);
        lock (_lock)
        {
            _bytesByType[type] = _bytesByType.GetValueOrDefault(type) + amount;
        }
    }
}
