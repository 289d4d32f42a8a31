using System.IO.Pipelines;

namespace Mux.Transport;

/// <summary>A client and a server in memory, for fast, deterministic tests and benchmarks.</summary>
internal sealed class DuplexPipeTransport : IMuxTransport
{
    public DuplexPipeTransport(IDuplexPipe pipe)
        : this(pipe.Input, pipe.Output)
    {
    }

    private DuplexPipeTransport(PipeReader input, PipeWriter output)
    {
        Input = input;
        Output = output;
    }

    public PipeReader Input { get; }

    public PipeWriter Output { get; }

    public long SocketReceives => 0;

    public long SocketSends => 0;

    public
 static (DuplexPipeTransport A, DuplexPipeTransport B) CreatePair()
    {
        var options = new PipeOptions(readerScheduler: PipeScheduler.Inline, writerScheduler: PipeScheduler.Inline,
            pauseWriterThreshold: 64L * 1024 * 1024, resumeWriterThreshold: 32L * 1024 * 1024, useSynchronizationContext: false);
        var aToB = new Pipe(options);
        var bToA = new Pipe(options);
        return (new DuplexPipeTransport(bToA.Reader, aToB.Writer), new DuplexPipeTransport(aToB.Reader, bToA.Writer));
    }

    public void Start()
    {
    }

    public void Abort()
    {
        // Ends both directions: our reader sees completion, and the peer's reader sees our writer complete.
        Input.CancelPendingRead();
        Output.CancelPendingFlush();
    }

    public ValueTask DisposeAsync() => ValueTask.CompletedTask;
}
