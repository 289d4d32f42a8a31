using System.Diagnostics;
using System.IO.Pipelines;
using Microsoft.Extensions.Logging;
using Mux.Diagnostics;
using Mux.Protocol;
using Mux.Transport;

namespace Mux.Connection;

/// <summary>
/// One multiplexed connection: the machinery both ends share. Callers enqueue frames and one
/// writer at a time drains them into the pipe with one flush (MuxConnection.Write.cs); one reader
/// loop splits every complete frame out of each read and hands it on (MuxConnection.Read.cs). The
/// client and server subclasses decide what each frame means.
/// </summary>
internal abstract partial class MuxConnection : IAsyncDisposable
{
    private readonly IMuxTransport _transport;
    private readonly PipeReader _input;
    private readonly PipeWriter _output;

    // Completed once, when the connection has closed and every pending call has been failed.
    private readonly TaskCompletionSource _closed = new(TaskCreationOptions.RunContinuationsAsynchronously);

    // Why the connection closed (reason and fault together), null while open. Set exactly once,
    // by CompareExchange in Close, so a later Close(…, null) can never wipe the recorded fault.
    private CloseCause? _closeCause;

    private Task? _readLoop;

    protected MuxConnection(IMuxTransport transport, int maxFrameSize, ILogger logger, string name)
    {
        _transport = transport;
        _input = transport.Input;
        _output = transport.Output;
        MaxFrameSize = maxFrameSize;
        Logger = logger;
        Name = name;
    }

    /// <summary>The largest frame we accept: checked by the reader before buffering a frame.</summary>
    protected int MaxFrameSize { get; }

    /// <summary>The largest frame the peer accepts; refreshed from its handshake. Until then only
    /// the protocol minimum, which any handshake fits into.</summary>
    protected int PeerMaxFrameSize { get; set; } = ProtocolConstants.MinimumMaxFrameSize;

    protected ILogger Logger { get; }

    /// <summary>A short name for logs: the remote endpoint or "in-memory".</summary>
    public string Name { get; }

    public bool IsClosed => Volatile.Read(ref _closeCause) is not null;

    public MuxCloseReason CloseReason => Volatile.Read(ref _closeCause)?.Reason ?? MuxCloseReason.None;

    /// <summary>Completes when the connection has closed.</summary>
    public Task Completion => _closed.Task;

    public MuxConnectionStatistics GetStatistics() => new(
        FramesSent: Volatile.Read(ref _framesSent),
        Flushes: Volatile.Read(ref _flushes),
        SocketSends: _transport.SocketSends,
        FramesReceived: Volatile.Read(ref _framesReceived),
        Reads: Volatile.Read(ref _reads),
        SocketReceives: _transport.SocketReceives);

    /// <summary>Starts the transport and the reader loop.</summary>
    protected void StartLoops()
    {
        ConnectionGauges.Opened(this);
        _transport.Start();
        _readLoop = ReadLoopAsync();
    }

    /// <summary>
    /// Closes the connection once: records why, fails or cancels what is pending (in the subclass),
    /// and tears the transport down. Safe to call any number of times from any thread.
    /// </summary>
    public void Close(MuxCloseReason reason, Exception? error)
    {
        Debug.Assert(reason != MuxCloseReason.None);
        if (Interlocked.CompareExchange(ref _closeCause, new CloseCause(reason, error), null) is not null)
        {
            return;
        }

        ConnectionLog.ConnectionClosed(Logger, Name, reason, error);
        ConnectionGauges.Closed(this);
        try
        {
            OnClosed(CreateClosedException());
        }
        finally
        {
            // Wake the reader loop, stop writing, and drop the socket unless this is a graceful
            // local shutdown, which first lets the send loop finish what is already flushed.
            _input.CancelPendingRead();
            CompleteOutputIfIdle();
            if (reason != MuxCloseReason.LocalShutdown)
            {
                _transport.Abort();
            }

            _ = FinishCloseAsync();
        }
    }

    private async Task FinishCloseAsync()
    {
        try
        {
            await _transport.DisposeAsync().ConfigureAwait(false);
            if (_readLoop is not null)
            {
                await _readLoop.ConfigureAwait(false);
            }
        }
        catch (Exception ex)
        {
            // The connection is already closed; a fault while tearing it down changes nothing for callers.
            ConnectionLog.TeardownFailed(Logger, Name, ex);
        }
        finally
        {
            _closed.TrySetResult();
        }
    }

    /// <summary>The exception that calls failed by this close see.</summary>
    protected MuxConnectionException CreateClosedException()
    {
        CloseCause? cause = Volatile.Read(ref _closeCause);
        MuxCloseReason reason = cause?.Reason ?? MuxCloseReason.None;
        Exception? error = cause?.Error;
        string message = reason switch
        {
            MuxCloseReason.LocalShutdown => $"The Mux connection to {Name} was closed by this side.",
            MuxCloseReason.RemoteClosed => $"The Mux connection to {Name} was closed by the remote side.",
            MuxCloseReason.GoAway => $"The Mux connection to {Name} is shutting down (the server sent GoAway).",
            MuxCloseReason.ProtocolError => $"The Mux connection to {Name} was closed because of a protocol error: {error?.Message}",
            MuxCloseReason.TransportError => $"The Mux connection to {Name} failed: {error?.Message}",
            MuxCloseReason.HandshakeTimeout => $"The Mux connection to {Name} did not complete its handshake in time.",
            _ => $"The Mux connection to {Name} is closed.",
        };
        return new MuxConnectionException(message, reason, error);
    }

    /// <summary>Fails pending calls (client) or cancels running handlers (server).</summary>
    protected abstract void OnClosed(MuxConnectionException error);

    /// <summary>Handles one frame on the reader loop. Must not block: anything slow goes to the
    /// thread pool. A returned incomplete task pauses reading (backpressure).</summary>
    protected abstract ValueTask OnFrameAsync(Frame frame);

    /// <summary>The reason and fault of a close, published together.</summary>
    private sealed record CloseCause(MuxCloseReason Reason, Exception? Error);

    /// <summary>Closes the connection from this side; pending calls fail with MuxConnectionException.</summary>
    public async ValueTask DisposeAsync()
    {
        Close(MuxCloseReason.LocalShutdown, null);
        await Completion.ConfigureAwait(false);
    }
}
