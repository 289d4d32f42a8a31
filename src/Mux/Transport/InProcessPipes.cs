using System.IO.Pipelines;

namespace Mux.Transport;

/// <summary>
/// The two crossed pipes of an in-process connection, set up as a socket's are: a reader loop resumes on the thread pool,
/// never on the thread of the peer that flushed, and each direction holds its receiver's largest frame before it pauses
/// the writer, so flow control, large frames and a peer that stops reading behave as they do over TCP.
/// </summary>
internal static class InProcessPipes
{
    /// <param name="clientMaxFrameSize">The largest frame the client accepts (what the server sends it).</param>
    /// <param name="serverMaxFrameSize">The largest frame the server accepts.</param>
    public static (DuplexPipeTransport Client, DuplexPipeTransport Server) CreatePair(int clientMaxFrameSize, int serverMaxFrameSize)
    {
        Pipe toServer = Create(serverMaxFrameSize);
        Pipe toClient = Create(clientMaxFrameSize);
        return (new DuplexPipeTransport(new Direction(toClient.Reader, toServer.Writer)),
            new DuplexPipeTransport(new Direction(toServer.Reader, toClient.Writer)));
    }

    // Sized as a socket's input pipe: a largest frame and the start of the next fit before the writer pauses, or a
    // reader waiting for the rest of a frame and a writer waiting for room would wait for each other.
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
