using System.Diagnostics;

namespace Mux.Diagnostics;

/// <summary>
/// What <see cref="StageClock"/> counted on one connection (or a sum of connections): the time
/// the reader loop and the writer role spent working, in <see cref="Stopwatch"/> ticks, and how
/// many reads and writer turns that time was spread over.
/// </summary>
internal readonly record struct StageTimes(long ReaderTicks, long Reads, long WriterTicks, long WriterTurns)
{
    public double ReaderMicroseconds => ReaderTicks * 1e6 / Stopwatch.Frequency;

    public double WriterMicroseconds => WriterTicks * 1e6 / Stopwatch.Frequency;

    public static StageTimes operator +(StageTimes a, StageTimes b) =>
        new(a.ReaderTicks + b.ReaderTicks, a.Reads + b.Reads, a.WriterTicks + b.WriterTicks, a.WriterTurns + b.WriterTurns);

    public static StageTimes operator -(StageTimes end, StageTimes start) =>
        new(end.ReaderTicks - start.ReaderTicks, end.Reads - start.Reads, end.WriterTicks - start.WriterTicks, end.WriterTurns - start.WriterTurns);
}
