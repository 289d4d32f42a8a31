namespace Mux.Connection;

/// <summary>
/// When the writer loop lets a small batch wait for more frames instead of flushing it at once
/// (issue 24, "batching holds when cores are free"; docs/benchmarks.md, *Batching policy*).
/// </summary>
/// <remarks>
/// <para>
/// The writer loop keeps the writer role for as long as frames keep arriving: after each flush it
/// takes whatever was queued meanwhile. With free cores the handlers and continuations producing
/// frames run beside it, so "whatever was queued meanwhile" is the few frames that arrived during
/// one send syscall, and each of those small batches costs a flush and a send of its own: frames per
/// send fell from 14.5 to 7.5 going from 2 to 16 cores, and CPU per call rose with them; with a
/// core busy elsewhere the same load ran at 220-470 frames per send and far less CPU per call.
/// </para>
/// <para>
/// So the writer loop, instead of flushing a small batch (fewer than <see cref="SmallBatchFrames"/>
/// frames and <see cref="SmallBatchBytes"/> bytes) at once, goes to the back of the thread pool's
/// global queue once, holding the role, when more frames are expected: the connection has calls in
/// flight (it is not quiet) and the pool has work queued (the handlers and continuations that the
/// reader dispatched, which produce this connection's next frames, run first). When it runs again
/// it flushes everything queued by then, whatever the size: one wait per batch, never two. It does
/// not wait when the batch's oldest frame may already have waited <see cref="Bound"/> (measured
/// from the start of the previous writer turn, the earliest such a frame can have been queued), so
/// a wait is only ever taken for frames that are fresh.
/// </para>
/// <para>
/// What a wait adds is one pass through the items queued ahead of the writer at that moment (new
/// work queues behind it), which at the loads where this triggers is a few microseconds per item
/// divided by the workers. A lone call never waits: a quiet connection is written inline by its
/// sender (MuxConnection.Send.cs), and the first writer turn after the role was free does not
/// wait either (it has just come through the pool's queue once). The decision reads no clock
/// unless every other condition holds, and then the connection's <see cref="TimeProvider"/>.
/// </para>
/// </remarks>
internal static class BatchingPolicy
{
    /// <summary>A batch of this many frames or more is flushed at once. The C echo on one
    /// socket carried 2.10M messages/s at 16 frames per write and 7.17M at 64: up to about here a
    /// bigger batch still buys a lot; past it the send's cost is spread thin already.</summary>
    public const int SmallBatchFrames = 64;

    /// <summary>A batch of this many bytes or more is flushed at once, however few its frames.</summary>
    public const int SmallBatchBytes = 16 * 1024;

    /// <summary>The writer never holds back frames that may have waited this long already. Above
    /// a loopback send (the writer stage's 12 µs per call at 1 caller is mostly that), so that the
    /// frames queued during one flush can still wait once; far below a call's latency at the loads
    /// where batches can grow (p50 ~500 µs at 500 callers).</summary>
    public static readonly TimeSpan Bound = TimeSpan.FromMicroseconds(50);

    /// <summary>Whether the writer goes to the back of the pool's queue once before flushing what
    /// <paramref name="load"/> has queued. Asks the cheapest questions first and reads the clock
    /// only when every other answer says wait: the writer asks once per turn.</summary>
    public static bool ShouldWait<TLoad>(ref TLoad load)
        where TLoad : struct, IBatchLoad =>
        load.QueuedFrames < SmallBatchFrames
        && load.QueuedBytes < SmallBatchBytes
        && load.WorkQueued
        && !load.IsQuiet
        && load.Clock.GetElapsedTime(load.TurnStartedAt) < Bound;
}

/// <summary>What <see cref="BatchingPolicy"/> asks of a connection, each answer read only when
/// needed (a struct, so the policy is compiled for each with no call through an interface).</summary>
internal interface IBatchLoad
{
    /// <summary>Frames queued for the writer now.</summary>
    int QueuedFrames { get; }

    /// <summary>Bytes queued for the writer now.</summary>
    int QueuedBytes { get; }

    /// <summary>The thread pool has work items waiting (they may produce frames).</summary>
    bool WorkQueued { get; }

    /// <summary>At most one call in flight: no other frame is coming.</summary>
    bool IsQuiet { get; }

    /// <summary>The connection's clock (the options' TimeProvider).</summary>
    TimeProvider Clock { get; }

    /// <summary>The <see cref="Clock"/> timestamp at which the previous writer turn took the queue:
    /// every frame queued now was queued after it.</summary>
    long TurnStartedAt { get; }
}
