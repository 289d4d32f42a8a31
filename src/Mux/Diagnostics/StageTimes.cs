namespace Mux.Diagnostics;

/// <summary>
/// What <see cref="StageClock"/> counted on one connection, or a sum of connections: the time the reader loop and the
/// writer role spent working, and how many reads and writer turns it was spread over.
/// </summary>
internal readonly record struct StageTimes(double ReaderMicroseconds, long Reads, double WriterMicroseconds, long WriterTurns)
{
    public static StageTimes operator +(StageTimes a, StageTimes b) =>
        new(a.ReaderMicroseconds + b.ReaderMicroseconds, a.Reads + b.Reads,
            a.WriterMicroseconds + b.WriterMicroseconds, a.WriterTurns + b.WriterTurns);

    public static StageTimes operator -(StageTimes end, StageTimes start) =>
        new(end.ReaderMicroseconds - start.ReaderMicroseconds, end.Reads - start.Reads,
            end.WriterMicroseconds - start.WriterMicroseconds, end.WriterTurns - start.WriterTurns);
}
