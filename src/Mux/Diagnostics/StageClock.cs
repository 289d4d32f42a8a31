using System.Runtime.InteropServices;

namespace Mux.Diagnostics;

/// <summary>
/// The time one of a connection's two serial stages spends working, which bounds the connection at 1 / its time per call.
/// Two clock reads per read or writer turn, never per frame; plain stores by the owning stage, read racily. The counters
/// sit a cache line away from the fields around them, so the stage's stores never invalidate a line others write.
/// </summary>

[StructLayout(LayoutKind.Explicit, Size = 152)]
internal struct StageClock
{
    [FieldOffset(64)]
    private long _ticks;

    [FieldOffset(72)]
    private long _spans;

    // The start of the open span, 0 when none is: a writer turn starts and stops in different methods.
    [FieldOffset(80)]
    private long _start;

    public void Add(long start, long now)
    {
        Volatile.Write(ref _ticks, _ticks + (now - start));
        Volatile.Write(ref _spans, _spans + 1);
    }

    public void Start(long now) => _start = now;

    // A stop without a start (a turn that began somewhere not hooked) counts nothing.
    public void Stop(long now)
    {
        long start = _start;
        if (start != 0)
        {
            _start = 0;
            Add(start, now);
        }
    }

    // Each total exact, the pair not a snapshot.
    public readonly (double Microseconds, long Spans) Read(long frequency) =>
        (Volatile.Read(in _ticks) * 1e6 / frequency, Volatile.Read(in _spans));
}

/// <summary>What <see cref="StageClock"/> counted on one connection, or a sum of connections.</summary>
internal readonly record struct StageTimes(double ReaderMicroseconds, long Reads, double WriterMicroseconds, long WriterTurns)
{
    public static StageTimes OfReader((double Microseconds, long Spans) reader) => new(reader.Microseconds, reader.Spans, 0, 0);

    public static StageTimes OfWriter((double Microseconds, long Spans) writer) => new(0, 0, writer.Microseconds, writer.Spans);

    public static StageTimes operator +(StageTimes a, StageTimes b) =>
        new(a.ReaderMicroseconds + b.ReaderMicroseconds, a.Reads + b.Reads,
            a.WriterMicroseconds + b.WriterMicroseconds, a.WriterTurns + b.WriterTurns);

    public static StageTimes operator -(StageTimes end, StageTimes start) =>
        new(end.ReaderMicroseconds - start.ReaderMicroseconds, end.Reads - start.Reads,
            end.WriterMicroseconds - start.WriterMicroseconds, end.WriterTurns - start.WriterTurns);
}
