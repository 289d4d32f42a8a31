using System.Diagnostics.Tracing;
using System.Globalization;
using Mux.Tests.Infrastructure;

namespace Mux.Tests.Fragments;

/// <summary>
/// Sees every array of 85,000 bytes or more that the process allocates on the large object heap or
/// rents from ArrayPool.Shared between <see cref="StartAsync"/> and <see cref="StopAsync"/>: the
/// runtime's GC allocation-tick events of kind Large (one for every large-object allocation of
/// 100 KB or more, as the load runner's --loh-events uses them) and ArrayPoolEventSource's
/// BufferRented events (a pooled large array is not allocated again, so the heap alone would miss
/// one rented from the pool). The GC events arrive late, on the listener's own thread, so each
/// edge of the window is an array of a size nothing else allocates, awaited until it is heard:
/// whatever was allocated before the edge was heard before it.
/// </summary>
internal sealed class LargeArrayWatch : EventListener
{
    /// <summary>From this size an array is on the large object heap.</summary>
    public const int LargeObjectThreshold = 85_000;

    private const string RuntimeEventSource = "Microsoft-Windows-DotNETRuntime";
    private const string ArrayPoolEventSource = "System.Buffers.ArrayPoolEventSource";
    private const long GcKeyword = 0x1;
    private const uint LargeObjectHeap = 1;

    // The edges' arrays: sizes no other allocation of a test has (odd, between 100 KB and 1 MB).
    private const int StartMarkLength = 654_321;
    private const int StopMarkLength = 765_431;

    private readonly Lock _lock = new();

    // What was heard, in arrival order, and whether each edge was. Under _lock; written by the
    // listener's threads (GC events on its dispatch thread, pool events on the renting thread).
    private readonly List<LargeArray> _heard = [];
    private bool _started;
    private bool _stopped;

    // Anchors the edges' arrays until they have been heard. Test thread only.
    private byte[]? _mark;

    /// <summary>The large-object allocations heard in the window (not the edges' own).</summary>
    public List<LargeArray> Allocated { get; } = [];

    /// <summary>The large arrays rented from ArrayPool.Shared in the window.</summary>
    public List<LargeArray> Rented { get; } = [];

    /// <summary>Opens the window once the listener is known to hear allocations.</summary>
    public async Task StartAsync()
    {
        _mark = new byte[StartMarkLength];
        await Hosts.WaitUntilAsync(() => { lock (_lock) { return _started; } }, "the large-object allocation events to be heard");
        _mark = null;
    }

    /// <summary>Closes the window once everything allocated before it has been heard.</summary>
    public async Task StopAsync()
    {
        _mark = new byte[StopMarkLength];
        await Hosts.WaitUntilAsync(() => { lock (_lock) { return _stopped; } }, "the window's large-object allocation events to be heard");
        GC.KeepAlive(_mark);
        _mark = null;
    }

    /// <summary>The arrays in <paramref name="arrays"/>, one a line, for a failure message.</summary>
    public static string Describe(IEnumerable<LargeArray> arrays) =>
        string.Join(", ", arrays.Select(static array => string.Create(CultureInfo.InvariantCulture, $"{array.Type} of {array.Size:N0} B")));

    protected override void OnEventSourceCreated(EventSource eventSource)
    {
        if (eventSource.Name == RuntimeEventSource)
        {
            EnableEvents(eventSource, EventLevel.Verbose, (EventKeywords)GcKeyword);
        }
        else if (eventSource.Name == ArrayPoolEventSource)
        {
            EnableEvents(eventSource, EventLevel.Verbose);
        }
    }

    protected override void OnEventWritten(EventWrittenEventArgs eventData)
    {
        if (eventData.PayloadNames is null || eventData.Payload is null)
        {
            return;
        }

        if (eventData.EventSource.Name == ArrayPoolEventSource)
        {
            int sizeIndex = eventData.PayloadNames.IndexOf("bufferSize");
            if (eventData.EventName == "BufferRented" && sizeIndex >= 0)
            {
                int size = Convert.ToInt32(eventData.Payload[sizeIndex], CultureInfo.InvariantCulture);
                if (size >= LargeObjectThreshold)
                {
                    Add(new LargeArray("rented byte[]", size), rented: true);
                }
            }

            return;
        }

        if (eventData.EventName?.StartsWith("GCAllocationTick", StringComparison.Ordinal) == true)
        {
            int kindIndex = eventData.PayloadNames.IndexOf("AllocationKind");
            int typeIndex = eventData.PayloadNames.IndexOf("TypeName");
            int sizeIndex = eventData.PayloadNames.IndexOf("ObjectSize");
            if (kindIndex >= 0 && typeIndex >= 0 && sizeIndex >= 0 && Convert.ToUInt32(eventData.Payload[kindIndex], CultureInfo.InvariantCulture) == LargeObjectHeap)
            {
                Add(new LargeArray(eventData.Payload[typeIndex] as string ?? "?", Convert.ToInt64(eventData.Payload[sizeIndex], CultureInfo.InvariantCulture)), rented: false);
            }
        }
    }

    private void Add(LargeArray array, bool rented)
    {
        bool mark = !rented && array.Type == "System.Byte[]" && array.Size is > StartMarkLength and < StartMarkLength + 64;
        lock (_lock)
        {
            if (mark && !_started)
            {
                _started = true;
            }
            else if (!_started || _stopped)
            {
                // Outside the window.
            }
            else if (!rented && array.Type == "System.Byte[]" && array.Size is >= StopMarkLength and < StopMarkLength + 64)
            {
                _stopped = true;
            }
            else
            {
                (rented ? Rented : Allocated).Add(array);
            }
        }
    }

    /// <summary>One large array: its type and its size (for an allocation, the object's, header included).</summary>
    public readonly record struct LargeArray(string Type, long Size);
}
