using System.Diagnostics;
using System.Security.Claims;
using MessagePack;
using Microsoft.Extensions.Logging;
using Mux.Diagnostics;
using Mux.Protocol;
using Mux.Transport;

namespace Mux.Connection;

/// <summary>
/// Owns a connection's life: the start, the close (once), the keepalive timer and the handshake's hooks. Symmetric: either
/// end calls and either end serves; calls the server starts carry ServerInitiated, so the two id spaces never meet. The
/// subclasses add only the handshake, and what GoAway and a close mean to them.
/// </summary>
internal abstract partial class MuxConnection : IAsyncDisposable
{
    // How long a graceful close keeps reading and discarding after its send side is shut down, waiting for the peer's end.
    internal static readonly TimeSpan DefaultDrainTimeout = TimeSpan.FromSeconds(1);

    private readonly IMuxTransport _transport;

    // Completed once the connection has closed and every pending call has been failed.
    private readonly TaskCompletionSource _closed = new(TaskCreationOptions.RunContinuationsAsynchronously);

    // Why the connection closed, null while open. Set once, by CloseCore's CompareExchange, so a later close can never
    // wipe the recorded fault; that CAS is also the fence Outbound's release of the writer role pairs with.
    private CloseCause? _closeCause;

    // Who the peer is, and the user its served calls run as: a server sets both in its handshake, before it accepts any
    // call; a client makes them on first use. Written once.
    private MuxConnectionInfo? _peerInfo;
    private ClaimsPrincipal? _peerUser;

    private PeerSettings _peer = PeerSettings.BeforeHandshake;

    // Written once, by CompleteHandshake; see IsHandshakeDone.
    private bool _handshakeAnswered;

    // services: what this side serves to the peer's calls.
    protected MuxConnection(IMuxTransport transport, ConnectionSettings settings, ServiceMethods services, ILogger logger, string name)
    {
        _transport = transport;
        Settings = settings;
        IsServer = settings.IsServer;
        TimeProvider = settings.TimeProvider;
        SerializerOptions = settings.SerializerOptions;
        Logger = GuardedLogger.Wrap(logger);
        Name = name;

        // The roles send through the Outbound, and the Inbound routes to the roles.
        Outbound = new Outbound(this, transport.Output, settings);
        Outgoing = new OutgoingCalls(this, settings.CallTimeout);
        Incoming = new IncomingCalls(this, services, settings);
        Inbound = new Inbound(this, transport.Input, settings);
    }

    public bool IsServer { get; }

    // For messages: this side, the other, and where this side's limits are set.
    public string SideName => IsServer ? "server" : "client";

    public string PeerName => IsServer ? "client" : "server";

    public string OptionsName => IsServer ? nameof(MuxServerOptions) : nameof(MuxClientOptions);

    public OutgoingCalls Outgoing { get; }

    public IncomingCalls Incoming { get; }

    internal Outbound Outbound { get; }

    internal Inbound Inbound { get; }

    internal ConnectionSettings Settings { get; }

    // Written by CompleteHandshake, before the handshake is published; read in place.
    internal ref readonly PeerSettings Peer => ref _peer;

    // Copied from the settings: every call reads them.
    public MessagePackSerializerOptions SerializerOptions { get; }

    // Guarded: a logger that throws loses its entry and nothing else.
    public ILogger Logger { get; }

    // For logs: the remote endpoint, or "in-memory".
    public string Name { get; }

    public TimeProvider TimeProvider { get; }

    // Set after the reader loop's flag and this side's HelloAck, if it owes one: the timer and the drains send nothing before
    // it, as the peer takes only the handshake's frames until its answer.
    protected bool IsHandshakeDone => Volatile.Read(ref _handshakeAnswered);

    public bool IsClosed => Volatile.Read(ref _closeCause) is not null;

    public MuxCloseReason CloseReason => Volatile.Read(ref _closeCause)?.Reason ?? MuxCloseReason.None;

    public Task Completion => _closed.Task;

    // MuxCallContext.Connection.
    public MuxConnectionInfo PeerInfo =>
        Volatile.Read(ref _peerInfo)
        ?? Interlocked.CompareExchange(ref _peerInfo, new MuxConnectionInfo(_transport.RemoteEndPoint, null, null), null)
        ?? _peerInfo!;

    // MuxCallContext.User: who the handshake authenticated, else an anonymous user.
    public ClaimsPrincipal PeerUser =>
        Volatile.Read(ref _peerUser) ?? Interlocked.CompareExchange(ref _peerUser, new ClaimsPrincipal(new ClaimsIdentity()), null) ?? _peerUser!;

    protected System.Security.Cryptography.X509Certificates.X509Certificate2? PeerCertificate => _transport.RemoteCertificate;

    protected System.Net.EndPoint? PeerEndPoint => _transport.RemoteEndPoint;

    public MuxConnectionStatistics GetStatistics() => new(
        FramesSent: Outbound.FramesSent,
        Flushes: Outbound.Flushes,
        SocketSends: _transport.SocketSends,
        FramesReceived: Inbound.FramesReceived,
        Reads: Inbound.Reads,
        SocketReceives: _transport.SocketReceives);

    internal StageTimes GetStageTimes() => Inbound.Stages + Outbound.Stages;

    // Once, in the handshake, before any call is served.
    protected void SetPeer(MuxConnectionInfo info, ClaimsPrincipal? user)
    {
        Volatile.Write(ref _peerInfo, info);
        if (user is not null)
        {
            Volatile.Write(ref _peerUser, user);
        }
    }

    /// <summary>Calls flow from here on.</summary>

    protected void CompleteHandshake(in PeerSettings peer, HandshakeSettings? helloAck = null)
    {
        _peer = peer;
        Outbound.OnPeerSettings(peer);
        Outgoing.OnPeerSettings(peer);

        // The volatile write publishes every copy above to the threads that see the handshake done. Before the HelloAck: the
        // peer may send calls as soon as it reads it, and the reader loop must take them.
        Inbound.CompleteHandshake();
        if (helloAck is { } answer)
        {
            Outbound.TrySendFrame(FrameType.HelloAck, 0, ref answer); // Closed meanwhile: the client's connect fails with the close.
        }

        // After the HelloAck is queued: a Ping or GoAway the timer sends from here on goes out behind it.
        Volatile.Write(ref _handshakeAnswered, true);
    }

    // Hello, HelloAck or a refusal, before any other frame is accepted. Reader loop only.
    internal abstract void OnHandshakeFrame(in Frame frame);

    // An Error with call id 0 after the handshake, which only a server sends.
    internal virtual void OnConnectionError(in Frame frame) =>
        throw new MuxProtocolException($"A {SideName} does not accept Error frames with call id 0 after the handshake.");

    protected void StartLoops()
    {
        ConnectionGauges.Opened(this);
        StartTimer();
        if (IsClosed)
        {
            // A deadline already past when the timer was armed (a server's handshake timeout that a slow TLS handshake used
            // up) closed the connection and disposed its transport: loops started now would run on released buffers.
            return;
        }

        _transport.Start();
        Inbound.Start();
    }

    /// <summary>Any thread, any number of times. <see cref="MuxCloseReason.LocalShutdown"/> closes gracefully; any other
    /// reason drops the connection at once.</summary>
    public void Close(MuxCloseReason reason, Exception? error) =>
        CloseCore(reason, error, reason == MuxCloseReason.LocalShutdown ? DefaultDrainTimeout : TimeSpan.Zero);

    /// <summary>Also cuts short a graceful close already under way, for a connection whose time has run out.</summary>
    public void Abort(MuxCloseReason reason, Exception? error) => CloseCore(reason, error, drainTimeout: null);

    /// <summary>What is queued is written (by a server) or dropped (by a client, whose calls the close fails), and the
    /// reader discards until the peer ends the stream or <paramref name="drainTimeout"/> passes.</summary>
    public void CloseGracefully(MuxCloseReason reason, TimeSpan drainTimeout) => CloseCore(reason, null, drainTimeout);

    // drainTimeout: how long a graceful close waits for the peer to end its stream; zero drops the connection at once;
    // null (an abort) also cuts short a close already under way.
    private void CloseCore(MuxCloseReason reason, Exception? error, TimeSpan? drainTimeout)
    {
        Debug.Assert(reason != MuxCloseReason.None);
        bool drain = drainTimeout is { } timeout && timeout > TimeSpan.Zero;
        if (Interlocked.CompareExchange(ref _closeCause, new CloseCause(reason, error), null) is not null)
        {
            if (drainTimeout is null)
            {
                // Closing already, maybe gracefully: dropping the socket ends a send stuck on a peer that does not read.
                Inbound.StopDraining();
                _transport.Abort();
            }

            return;
        }

        Inbound.SetDrain(drain); // Right after the cause: see Inbound._drainInput.
        ConnectionLog.ConnectionClosed(Logger, Name, reason, error);
        ConnectionGauges.Closed(this);
        _timer?.Dispose();
        try
        {
            MuxConnectionException closed = CloseError;
            OnClosing(closed);
            Incoming.CancelAll();
            Outgoing.FailAll(closed);
        }
        finally
        {
            Outbound.SignalRoom(); // A reader loop waiting for room stops waiting and sees the close.

            // Stop writing: a graceful close first writes what is queued, and completing the output makes the transport
            // send it and shut down its send side. An abortive close also wakes the reader and drops the socket.
            if (!drain)
            {
                Inbound.CancelPendingRead();
            }

            Outbound.Complete();
            if (!drain)
            {
                _transport.Abort(); // No time for the send side either: what was queued is not waited for.
            }

            _ = FinishCloseAsync(drain ? drainTimeout!.Value : TimeSpan.Zero);
        }
    }

    private async Task FinishCloseAsync(TimeSpan drainTimeout)
    {
        try
        {
            // The read side first, so the socket never closes with unread bytes; then the transport sends what was flushed.
            if (drainTimeout > TimeSpan.Zero)
            {
                try
                {
                    await Inbound.Completion.WaitAsync(drainTimeout, TimeProvider).ConfigureAwait(false);
                }
                catch (TimeoutException)
                {
                    Inbound.StopDraining(); // The peer never closed its side.
                }
            }

            await Inbound.Completion.ConfigureAwait(false);
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

    // A new exception each time: every call that fails throws its own.
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

    // What the subclass ends as the connection closes, before the roles fail their calls: a handshake, a drain.
    protected virtual void OnClosing(MuxConnectionException error)
    {
    }

    // The peer sent GoAway and every call of ours it promised to serve has completed.
    internal virtual void OnCallsDrainedAfterGoAway()
    {
    }

    public async ValueTask DisposeAsync()
    {
        Close(MuxCloseReason.LocalShutdown, null);
        await Completion.ConfigureAwait(false);
    }

    /// <summary>"64 MiB", "64 KiB" or "1000 bytes", for messages about sizes.</summary>
    internal static string DescribeSize(long bytes) =>
        bytes % (1024 * 1024) == 0 ? $"{bytes / (1024 * 1024)} MiB" : bytes % 1024 == 0 ? $"{bytes / 1024} KiB" : $"{bytes} bytes";

    private sealed record CloseCause(MuxCloseReason Reason, Exception? Error);
}
