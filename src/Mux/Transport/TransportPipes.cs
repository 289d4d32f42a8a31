using System.IO.Pipelines;

namespace Mux.Transport;

/// <summary>
/// The pipe settings every byte-pumping transport (socket or stream) uses, so that the reader's and
/// writer's batching behave the same whatever carries the bytes.
/// </summary>
internal static class TransportPipes
{
    /// <summary>One receive takes up to this much: enough for hundreds of small frames under load.</summary>
    public const int ReceiveBufferSize = 64 * 1024;

    /// <summary>
    /// The pipe a receive loop fills and the frame reader drains. The reader waits for whole frames,
    /// so the pipe must hold one of the largest allowed frames plus the start of the next before it
    /// pauses the receive loop; otherwise a large frame would deadlock (writer paused, reader waiting
    /// for more). The reader resumes inline: the parser only slices and dispatches, never user code.
    /// </summary>
    public static Pipe CreateInput(int maxFrameSize)
    {
        long pause = Math.Max(1024L * 1024, (long)maxFrameSize + ReceiveBufferSize * 2);
        return new Pipe(new PipeOptions(
            readerScheduler: PipeScheduler.Inline,
            writerScheduler: PipeScheduler.Inline,
            pauseWriterThreshold: pause,
            resumeWriterThreshold: pause / 2,
            minimumSegmentSize: ReceiveBufferSize,
            useSynchronizationContext: false));
    }

    /// <summary>
    /// The pipe the connection writes frames into and a send loop drains. The send loop resumes
    /// inline, so a flush sends on the flushing thread (no hop when idle). Output pauses writers
    /// when the peer cannot keep up; a large frame is written whole before the flush, so the
    /// threshold only bounds what piles up behind it.
    /// </summary>
    public static Pipe CreateOutput() => new(new PipeOptions(
        readerScheduler: PipeScheduler.Inline,
        writerScheduler: PipeScheduler.ThreadPool,
        pauseWriterThreshold: 1024 * 1024,
        resumeWriterThreshold: 512 * 1024,
        minimumSegmentSize: ReceiveBufferSize,
        useSynchronizationContext: false));
}
