using System.Runtime.InteropServices;

namespace Mux.Diagnostics;

/// <summary>
/// The time a connection's two serial stages spend working, so a benchmark can tell how close one connection is to the
/// ceiling they put on it (1 / the busier stage's time per call), whatever the cores. The reader loop counts each read
/// from its buffer in hand to its AdvanceTo, less any backpressure wait; the writer role counts each turn from gathering
/// queued frames to the return of its flush call, so neither a later flush completion nor the thread-pool queue counts.
/// </summary>
/// <remarks>
/// Two clock reads of the connection's TimeProvider per read and per writer turn, never per frame; plain stores, no lock.
/// Each half is written by its stage only (the reader loop, or whoever holds the writer role, which is handed over with
/// a full fence) and read racily by diagnostics. The halves sit at least a cache line apart from each other and from the
/// fields around the struct, so the reader's and the writer's stores never invalidate each other's lines.
/// </remarks>
[StructLayout(LayoutKind.Explicit, Size = 256)]
internal struct StageClock
{
    // Reader loop only: ticks spent and reads counted.
    [FieldOffset(64)]
    private long _readerTicks;

    [FieldOffset(72)]
    private long _readerSpans;

    // Writer role holder only: ticks spent, turns counted, and the start of the open turn (0 when none is).
    [FieldOffset(160)]
    private long _writerTicks;

    [FieldOffset(168)]
    private long _writerSpans;

    [FieldOffset(176)]
    private long _writerStart;

    /// <summary>Reader loop: one read is done (its AdvanceTo made) at <paramref name="now"/>; <paramref name="start"/> is
    /// when its buffer was in hand, moved later by any backpressure wait.</summary>
    public void AddReader(long start, long now)
    {
        long elapsed = now - start;
        Volatile.Write(ref _readerTicks, _readerTicks + elapsed);
        Volatile.Write(ref _readerSpans, _readerSpans + 1);
    }

    /// <summary>Writer role holder: a turn starts gathering frames.</summary>
    public void StartWriter(long now) => _writerStart = now;

    /// <summary>Writer role holder: the turn's flush call has returned. A stop without a start (a turn that began
    /// somewhere not hooked) counts nothing.</summary>
    public void StopWriter(long now)
    {
        long start = _writerStart;
        if (start != 0)
        {
            _writerStart = 0;
            Volatile.Write(ref _writerTicks, _writerTicks + (now - start));
            Volatile.Write(ref _writerSpans, _writerSpans + 1);
        }
    }

    /// <summary>The totals so far, each exact but the set not a snapshot, for ticks of <paramref name="frequency"/> per
    /// second.</summary>
    public readonly StageTimes Read(long frequency) => new(
        Volatile.Read(in _readerTicks) * 1e6 / frequency,
        Volatile.Read(in _readerSpans),
        Volatile.Read(in _writerTicks) * 1e6 / frequency,
        Volatile.Read(in _writerSpans));
}
