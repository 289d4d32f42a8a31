using System.IO.Pipelines;

namespace Mux.Transport;

/// <summary>
/// Set up as a socket's pipes are: a reader resumes on the thread pool, never on the peer's flushing thread, and each
/// direction holds its receiver's largest frame before it pauses the writer, so flow control behaves as over TCP.
/// </summary>
internal static class InProcessPipes
{
    public static (DuplexPipeTransport Client, DuplexPipeTransport Server) CreatePair(int clientMaxFrameSize, int serverMaxFrameSize)
    {
        Pipe toServer = Create(serverMaxFrameSize);
        Pipe toClient = Create(clientMaxFrameSize);
        return (new DuplexPipeTransport(new Direction(toClient.Reader, toServer.Writer)),
            new DuplexPipeTransport(new Direction(toServer.Reader, toClient.Writer)));
    }

    // Sized as a socket's input pipe (TransportPipes.CreateInput), for the same deadlock.

    private static Pipe Create(int receiverMaxFrameSize)
    {
        long pause = Math.Max(1024L * 1024, (long)receiverMaxFrameSize + TransportPipes.ReceiveBufferSize * 2);
        return new Pipe(new PipeOptions(
            readerScheduler: PipeScheduler.ThreadPool,
            writerScheduler: PipeScheduler.ThreadPool,
            pauseWriterThreshold: pause,
            resumeWriterThreshold: pause / 2,
            minimumSegmentSize: TransportPipes.ReceiveBufferSize,
            useSynchronizationContext: false));
    }

    private sealed class Direction(PipeReader input, PipeWriter output) : IDuplexPipe
    {
        public PipeReader Input { get; } = input;

        public PipeWriter Output { get; } = output;
    }
}
