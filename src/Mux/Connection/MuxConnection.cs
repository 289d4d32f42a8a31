using System.Diagnostics;
using System.IO.Pipelines;
using Microsoft.Extensions.Logging;
using MessagePack;
using Mux.Diagnostics;
using Mux.Protocol;
using Mux.Transport;

namespace Mux.Connection;

/// <summary>
/// One multiplexed connection: the engine both ends share, made of roles. A connection is
/// symmetric: either end calls (<see cref="Outgoing"/>, the caller role) and either end serves
/// (<see cref="Incoming"/>, the serving role); calls the server starts carry ServerInitiated, so the
/// two id spaces never meet. Callers queue frames and one writer at a time drains them into the
/// pipe with one flush (Outbound/); one reader loop splits every complete frame out of each read
/// and routes it to the role it belongs to (MuxConnection.Read.cs). The client and server
/// subclasses add only their own part: the handshake, and what GoAway and a close mean to them.
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

    protected MuxConnection(IMuxTransport transport, int maxFrameSize, ILogger logger, string name, bool isServer)
    {
        _transport = transport;
        _input = transport.Input;
        _output = transport.Output;
        MaxFrameSize = maxFrameSize;
        Logger = GuardedLogger.Wrap(logger);
        Name = name;
        IsServer = isServer;
    }

    /// <summary>Whether this is the server's end (it accepted the connection). Immutable.</summary>
    public bool IsServer { get; }

    /// <summary>"server" or "client": this side, in messages.</summary>
    public string SideName => IsServer ? "server" : "client";

    /// <summary>"client" or "server": the other side, in messages.</summary>
    public string PeerName => IsServer ? "client" : "server";

    /// <summary>Where this side's limits are set, in messages ("MuxClientOptions").</summary>
    public string OptionsName => IsServer ? nameof(MuxServerOptions) : nameof(MuxClientOptions);

    /// <summary>The caller role: the calls this side makes. Set by the subclass's constructor.</summary>
    public OutgoingCalls Outgoing { get; protected init; } = null!;

    /// <summary>The serving role: the calls the peer makes to this side. Set by the subclass's constructor.</summary>
    public IncomingCalls Incoming { get; protected init; } = null!;

    /// <summary>The options arguments and results are written and read with: the side's, with
    /// generated formatters consulted first (and untrusted-data protections on a server). Set by
    /// the subclass's constructor; immutable after.</summary>
    public MessagePackSerializerOptions SerializerOptions { get; protected init; } = null!;

    /// <summary>Whether the handshake has completed: until then only its frames are accepted.
    /// Set once, by CompleteHandshake: on the reader loop, or (a server whose Authenticate ran) on
    /// the thread that finished it, before the HelloAck is sent.</summary>
    protected bool IsHandshakeDone => _handshakeDone;

    // See IsHandshakeDone; volatile because a server may set it off the reader loop.
    private volatile bool _handshakeDone;

    /// <summary>The largest frame we accept: checked by the reader before buffering a frame.</summary>
    protected int MaxFrameSize { get; }

    /// <summary>The largest frame the peer accepts; refreshed from its handshake. Until then only
    /// the protocol minimum, which any handshake fits into.</summary>
    protected int PeerMaxFrameSize { get; private set; } = ProtocolConstants.MinimumMaxFrameSize;

    /// <summary>Takes the limits the peer announced in its handshake, and what this side's calls may
    /// carry to it, and completes the handshake: calls flow from here on. Before any call.</summary>
    protected void CompleteHandshake(in HandshakeSettings peer, bool readsTraceContext, bool takesStreams)
    {
        PeerMaxFrameSize = peer.MaxFrameSize;
        PeerStreamWindow = peer.StreamWindow;
        PeerMaxMessageSize = peer.MaxMessageSize;
        PeerEndsFragmentsOnCancel = peer.CancelEndsFragments;
        PeerMaxMetadataSize = peer.MaxMetadataSize;
        Outgoing.OnPeerSettings(peer.MaxConcurrentCalls, readsTraceContext, takesStreams);
        _handshakeDone = true;
    }

    /// <summary>The side's logger, guarded: a logger that throws loses its entry and nothing else
    /// (see <see cref="GuardedLogger"/>).</summary>
    public ILogger Logger { get; }

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
        StartTimer();
        if (IsClosed)
        {
            // A deadline already past when the timer was armed (a server's handshake timeout that
            // a slow TLS handshake used up) closed the connection and disposed its transport:
            // loops started now would run on released buffers.
            return;
        }

        _transport.Start();
        _readLoop = ReadLoopAsync();
    }

    /// <summary>How long a graceful close from this side keeps reading (and discarding) after it
    /// has sent everything and shut down its send side, waiting for the peer to close too.</summary>
    internal static readonly TimeSpan DefaultDrainTimeout = TimeSpan.FromSeconds(1);

    // 1 while a graceful close keeps reading and discarding until the peer ends the stream (so the
    // socket never closes with unread bytes, which would make the kernel reset the connection and
    // drop what we sent last). Set by CloseCore before the close is published; cleared when the
    // drain times out. Read by the reader loop.
    private volatile bool _drainInput;

    /// <summary>
    /// Closes the connection once: records why, fails or cancels what is pending (in the subclass),
    /// and tears the transport down. Safe to call any number of times from any thread.
    /// <see cref="MuxCloseReason.LocalShutdown"/> closes gracefully (see <see cref="CloseGracefully"/>);
    /// every other reason drops the connection at once.
    /// </summary>
    public void Close(MuxCloseReason reason, Exception? error) =>
        CloseCore(reason, error, reason == MuxCloseReason.LocalShutdown ? DefaultDrainTimeout : TimeSpan.Zero);

    /// <summary>
    /// Drops the connection at once, whatever <paramref name="reason"/> is: nothing queued is written
    /// and the peer is not waited for. For a connection that carries nothing worth a drain (its
    /// handshake never completed), or whose time has run out: a graceful close already under way is
    /// cut short too (it no longer waits for the peer to end its stream, nor to take what was sent).
    /// </summary>
    public void Abort(MuxCloseReason reason, Exception? error) => CloseCore(reason, error, drainTimeout: null);

    /// <summary>
    /// Closes without losing anything in flight: what is queued is written (by a server) or dropped
    /// (by a client, whose calls the close fails), the send side is flushed and shut down, and the
    /// reader keeps reading and discarding until the peer ends the stream or
    /// <paramref name="drainTimeout"/> passes; only then is the socket closed, once the peer has taken
    /// what was sent (or the transport's grace period for that has passed). A zero
    /// <paramref name="drainTimeout"/> leaves no time for any of it: the connection is dropped at once.
    /// </summary>
    public void CloseGracefully(MuxCloseReason reason, TimeSpan drainTimeout) => CloseCore(reason, null, drainTimeout);

    // drainTimeout: how long a graceful close waits for the peer to end its stream; zero drops the
    // connection at once; null (an abort) also cuts short a close already under way.
    private void CloseCore(MuxCloseReason reason, Exception? error, TimeSpan? drainTimeout)
    {
        Debug.Assert(reason != MuxCloseReason.None);
        bool drain = drainTimeout is { } timeout && timeout > TimeSpan.Zero;
        var cause = new CloseCause(reason, error);
        if (Interlocked.CompareExchange(ref _closeCause, cause, null) is not null)
        {
            if (drainTimeout is null)
            {
                // Closing already, maybe gracefully: stop waiting for the peer's end of stream, and
                // drop the socket, which ends a send stuck on a peer that does not read.
                _drainInput = false;
                _input.CancelPendingRead();
                _transport.Abort();
            }

            return;
        }

        // Published after the cause: a reader that sees the close before this flag stops reading,
        // which only costs the drain (never a frame we promised to send).
        _drainInput = drain;
        ConnectionLog.ConnectionClosed(Logger, Name, reason, error);
        ConnectionGauges.Closed(this);
        _timer?.Dispose();
        try
        {
            // Every call this side made fails, every handler still running is cancelled, and the
            // subclass first ends what it waits for (a handshake, a drain).
            MuxConnectionException closed = CloseError;
            OnClosing(closed);
            Incoming.CancelAll();
            Outgoing.FailAll(closed);
        }
        finally
        {
            SignalOutboundRoom(); // A reader loop waiting for room stops waiting and sees the close.
            // Stop writing (a graceful close first writes what is queued; completing the output
            // makes the transport send it and shut down its send side). An abortive close also
            // wakes the reader and drops the socket.
            if (!drain)
            {
                _input.CancelPendingRead();
            }

            CompleteOutputIfIdle();
            if (!drain)
            {
                // No time for the send side either: what was queued is not waited for.
                _transport.Abort();
            }

            _ = FinishCloseAsync(drain ? drainTimeout!.Value : TimeSpan.Zero);
        }
    }

    private async Task FinishCloseAsync(TimeSpan drainTimeout)
    {
        try
        {
            // First the read side: a graceful close waits (bounded) for the peer to end its stream,
            // so the socket is never closed with unread bytes; then the transport finishes sending
            // what was flushed and closes the socket.
            if (_readLoop is not null)
            {
                if (drainTimeout > TimeSpan.Zero)
                {
                    try
                    {
                        await _readLoop.WaitAsync(drainTimeout, TimeProvider).ConfigureAwait(false);
                    }
                    catch (TimeoutException)
                    {
                        // The peer never closed its side: stop waiting for it.
                        _drainInput = false;
                        _input.CancelPendingRead();
                    }
                }

                await _readLoop.ConfigureAwait(false);
            }

            await _transport.DisposeAsync().ConfigureAwait(false);
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

    /// <summary>Sends a frame with a raw body when nothing needs to know whether it went: false
    /// when the connection has closed (a Ping, stream credit, a GoAway: the close says the rest).</summary>
    internal bool TrySendRawFrame(FrameType type, uint callId, ReadOnlySpan<byte> body, FrameFlags flags = FrameFlags.None)
    {
        try
        {
            SendRawFrame(type, callId, body, flags);
            return true;
        }
        catch (MuxConnectionException)
        {
            return false;
        }
    }

    /// <summary>Sends a frame with a MessagePack body when nothing needs to know whether it went:
    /// false when the connection has closed (a refusal, an Error for a call not run, a stream's end:
    /// the peer fails or cancels the call, or forgets the connection, itself).</summary>
    internal bool TrySendFrame<TBody>(FrameType type, uint callId, ref TBody body, FrameFlags flags = FrameFlags.None)
        where TBody : struct, IFrameBody
    {
        try
        {
            SendFrame(type, callId, 0, ref body, flags);
            return true;
        }
        catch (MuxConnectionException)
        {
            return false;
        }
    }

    /// <summary>Sends an Error, or a StreamEnd that carries one, when nothing needs to know whether it
    /// went. A message too long for the peer's frames goes cut to its first 1,024 characters, which
    /// fit any frame a peer may announce: the peer must learn that the call or stream failed, or it
    /// waits for it forever.</summary>
    internal void TrySendError(FrameType type, uint callId, MuxStatusCode code, string message, string? remoteType, FrameFlags flags)
    {
        var body = new ErrorBody(code, message, remoteType);
        try
        {
            TrySendFrame(type, callId, ref body, flags);
        }
        catch (FrameTooLargeException)
        {
            var shortBody = new ErrorBody(code, message[..Math.Min(message.Length, 1024)], remoteType);
            TrySendFrame(type, callId, ref shortBody, flags);
        }
    }

    /// <summary>What a call on this connection fails with once it has closed (a new exception each
    /// time: every call that fails throws its own).</summary>
    public MuxConnectionException CloseError
    {
        get
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
                MuxCloseReason.KeepAliveTimeout => $"The Mux connection to {Name} was closed because the peer looks dead: {error?.Message}.",
                MuxCloseReason.IdleTimeout => $"The Mux connection to {Name} was closed because it held no calls for the server's IdleTimeout.",
                _ => $"The Mux connection to {Name} is closed.",
            };
            return new MuxConnectionException(message, reason, error);
        }
    }

    /// <summary>What the subclass ends when the connection closes (before the roles fail their
    /// calls): a handshake still waited for, a drain.</summary>
    protected virtual void OnClosing(MuxConnectionException error)
    {
    }

    /// <summary>The peer sent GoAway and every call of ours it promised to serve has completed. A
    /// client then closes the connection (its server is going away); a server keeps it for the
    /// client's own calls.</summary>
    internal virtual void OnCallsDrainedAfterGoAway()
    {
    }

    /// <summary>The reason and fault of a close, published together.</summary>
    private sealed record CloseCause(MuxCloseReason Reason, Exception? Error);

    /// <summary>Closes the connection from this side; pending calls fail with MuxConnectionException.</summary>
    public async ValueTask DisposeAsync()
    {
        Close(MuxCloseReason.LocalShutdown, null);
        await Completion.ConfigureAwait(false);
    }
}
