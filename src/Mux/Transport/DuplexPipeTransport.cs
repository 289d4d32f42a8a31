using System.IO.Pipelines;

namespace Mux.Transport;

/// <summary>
/// A transport over an existing pair of pipes (no socket). Used to run a client and a server
/// against each other in memory, for fast deterministic tests and benchmarks without a socket.
/// </summary>
internal sealed class DuplexPipeTransport : IMuxTransport
{
    private readonly IDuplexPipe _pipe;

    public DuplexPipeTransport(IDuplexPipe pipe) => _pipe = pipe;

    public PipeReader Input => _pipe.Input;

    public PipeWriter Output => _pipe.Output;

    public long SocketReceives => 0;

    public long SocketSends => 0;

    /// <summary>Creates two connected transports: what one writes, the other reads.</summary>
    public static (DuplexPipeTransport A, DuplexPipeTransport B) CreatePair()
    {
        var options = new PipeOptions(readerScheduler: PipeScheduler.Inline, writerScheduler: PipeScheduler.Inline, pauseWriterThreshold: 64L * 1024 * 1024, resumeWriterThreshold: 32L * 1024 * 1024, useSynchronizationContext: false);
        var aToB = new Pipe(options);
        var bToA = new Pipe(options);
        return (new DuplexPipeTransport(new Pair(bToA.Reader, aToB.Writer)), new DuplexPipeTransport(new Pair(aToB.Reader, bToA.Writer)));
    }

    public void Start()
    {
    }

    public void Abort()
    {
        // Ends both directions: our reader sees completion, and the peer's reader sees our writer complete.
        _pipe.Input.CancelPendingRead();
        _pipe.Output.CancelPendingFlush();
    }

    public ValueTask DisposeAsync() => ValueTask.CompletedTask;

    private sealed class Pair(PipeReader input, PipeWriter output) : IDuplexPipe
    {
        public PipeReader Input { get; } = input;

        public PipeWriter Output { get; } = output;
    }
}
