namespace Mux.Connection;

/// <summary>
/// When the writer loop lets a small batch wait for more frames instead of flushing it at once. With free cores, the
/// handlers and continuations producing frames run beside the loop, so what it finds queued after each send is a few
/// frames, each small batch paying a flush and a send of its own. So a batch under <see cref="SmallBatchFrames"/> frames
/// and <see cref="SmallBatchBytes"/> bytes goes once to the back of the thread pool's queue, holding the role, while more
/// frames are expected (calls in flight, pool work queued), and is then flushed whatever its size. It never waits twice,
/// nor once its oldest frame may have waited <see cref="Bound"/>, and a lone call never waits: its sender writes inline.
/// </summary>
internal static class BatchingPolicy
{
    // Past about this many frames, a bigger batch spreads a send's cost little thinner.
    public const int SmallBatchFrames = 64;

    public const int SmallBatchBytes = 16 * 1024;

    // Above a loopback send, so frames queued during one flush can still wait once; far below a loaded call's latency.
    public static readonly TimeSpan Bound = TimeSpan.FromMicroseconds(50);

    // The cheapest questions first, and the clock last: the writer asks once per turn.
    public static bool ShouldWait<TLoad>(ref TLoad load)
        where TLoad : struct, IBatchLoad =>
        load.QueuedFrames < SmallBatchFrames
        && load.QueuedBytes < SmallBatchBytes
        && load.WorkQueued
        && !load.IsQuiet
        && load.Clock.GetElapsedTime(load.TurnStartedAt) < Bound;
}

/// <summary>What <see cref="BatchingPolicy"/> asks of a connection, each answer read only when needed (a struct, so the
/// policy is compiled for each with no call through an interface).</summary>
internal interface IBatchLoad
{
    int QueuedFrames { get; }

    int QueuedBytes { get; }

    // The thread pool has work items waiting, which may produce frames.
    bool WorkQueued { get; }

    // At most one call in flight: no other frame is coming.
    bool IsQuiet { get; }

    TimeProvider Clock { get; }

    // When the previous writer turn took the queue: every frame queued now was queued after it.
    long TurnStartedAt { get; }
}
