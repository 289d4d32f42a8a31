namespace Mux.Connection;

/// <summary>
/// With free cores, the producers run beside the writer loop, so each small batch would pay a flush and a send of its
/// own. So a small batch goes once to the back of the thread pool's queue, holding the role, while more frames are
/// expected. It never waits twice, nor past <see cref="Bound"/>, and a lone call never waits: its sender writes inline.
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

/// <summary>Implemented by a struct, so the policy is compiled for each with no call through an interface.</summary>

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
