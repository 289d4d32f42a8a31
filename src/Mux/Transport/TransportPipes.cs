using System.IO.Pipelines;

namespace Mux.Transport;

/// <summary>Shared by socket and stream, so batching behaves the same whatever carries the bytes.</summary>
internal static class TransportPipes
{
    /// <summary>One receive takes up to this much: enough for hundreds of small frames under load.</summary>
    public const int ReceiveBufferSize = 64 * 1024;

    /// <summary>
    /// The pipe holds a largest frame plus the start of the next before it pauses the receive loop, or a large frame
    /// would deadlock (writer paused, reader waiting for more). The reader resumes inline: it never runs user code.
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
    /// The send loop resumes inline, so a flush sends on the flushing thread. A large frame is written whole before the
    /// flush, so the pause threshold only bounds what piles up behind it.
    /// </summary>

    public static Pipe CreateOutput() => new(new PipeOptions(
        readerScheduler: PipeScheduler.Inline,
        writerScheduler: PipeScheduler.ThreadPool,
        pauseWriterThreshold: 1024 * 1024,
        resumeWriterThreshold: 512 * 1024,
        minimumSegmentSize: ReceiveBufferSize,
        useSynchronizationContext: false));
}
