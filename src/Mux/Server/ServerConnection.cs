using System.Buffers.Binary;
using System.Runtime.InteropServices;
using System.Security.Claims;
using System.Security.Cryptography;
using Microsoft.Extensions.Logging;
using Mux.Connection;
using Mux.Protocol;
using Mux.Serialization;
using Mux.Transport;

namespace Mux.Server;

/// <summary>
/// The server's end of a connection: the engine's two roles (<see cref="MuxConnection.Incoming"/>
/// for the client's calls, <see cref="MuxConnection.Outgoing"/> for the calls its handlers make to
/// the client), plus what only a server does: the handshake as the side that accepts (and its
/// timeout), the idle close, and the drain with GoAway on shutdown.
/// </summary>
internal sealed class ServerConnection : MuxConnection
{
    private readonly MuxServerOptions _options;

    // Cancelled on close: the token Authenticate runs with.
    private readonly CancellationTokenSource _closing = new();

    // TimeProvider timestamp of the accept: the handshake timeout counts from it, since the
    // server lists the connection a moment before it starts it. Immutable.
    private readonly long _acceptedAt;

    // What handlers call the client through; created on first use, set only through CompareExchange.
    private MuxRemoteClient? _remoteClient;

    // Set by the reader loop when it hands the client's Hello to Authenticate: another frame before
    // the HelloAck breaks the protocol. Reader loop only.
    private bool _authenticating;

    // The user the host that accepted the connection authenticated (ASP.NET Core's, for a WebSocket);
    // null when there is none. Immutable.
    private readonly ClaimsPrincipal? _hostUser;

    // hostUser: the user the connection's host authenticated, if any: when it has an authenticated
    // identity it is the connection's user, and Authenticate is not run.
    public ServerConnection(IMuxTransport transport, ServiceMethods methods, MuxServerOptions options, IMuxServerInterceptor[] interceptors, ILogger logger, string name, ClaimsPrincipal? hostUser = null)
        : base(transport, options.MaxFrameSize, logger, name, isServer: true)
    {
        _options = options;
        _hostUser = hostUser;
        TimeProvider = options.TimeProvider;
        KeepAliveInterval = options.KeepAliveInterval;
        KeepAliveTimeout = options.KeepAliveTimeout;
        MaxQueuedOutboundBytes = options.MaxOutboundBytesPerConnection;
        StreamWindow = options.StreamWindow;
        MaxMessageSize = options.MaxMessageSize;
        MaxMetadataSize = OptionsValidation.EffectiveMetadataSize(options.MaxMetadataSize, options.MaxMessageSize);
        FragmentSize = options.FragmentSize;
        MaxMessagesInProgress = options.MaxConcurrentCallsPerConnection; // A client keeps at most that many calls outstanding.
        SerializerOptions = MuxSerializerOptions.ForServer(options.SerializerOptions);
        _acceptedAt = TimeProvider.GetTimestamp();
        Outgoing = new OutgoingCalls(this, options.ClientCallTimeout);
        Incoming = new IncomingCalls(this, methods, options.MaxConcurrentCallsPerConnection)
        {
            SendsDetailedErrors = options.EnableDetailedErrors,
            PropagatesCallContext = options.EnableCallContextPropagation,
            IsObserved = true,
            TracksIdle = options.IdleTimeout != Timeout.InfiniteTimeSpan, // The idle close (CheckDeadlines) reads IdleSince.
            Interceptors = interceptors,
        };

        if (options.EnableCallContextPropagation)
        {
            MuxCallContext.EnablePropagation();
        }
    }

    /// <summary>The client at the other end, for handlers to call back.</summary>
    internal MuxRemoteClient RemoteClient =>
        Volatile.Read(ref _remoteClient) ?? Interlocked.CompareExchange(ref _remoteClient, new MuxRemoteClient(this, _options.ClientCallTimeout), null) ?? _remoteClient!;

    /// <summary>A drain ends when the last call has queued its response, not when the response
    /// has been written: the close must still send it.</summary>
    protected override bool SendsQueuedFramesOnGracefulClose => true;

    /// <summary>Starts the loops, and the connection's timer with the handshake timeout on it (see
    /// <see cref="CheckDeadlines"/>).</summary>
    public void Start() => StartLoops();

    /// <summary>The client's Hello: checks the version and token, answers HelloAck with this
    /// server's settings, or refuses the connection.</summary>
    protected override void OnHandshakeFrame(in Frame frame)
    {
        if (frame.Type != FrameType.Hello || _authenticating)
        {
            throw new MuxProtocolException(_authenticating
                ? $"The client sent a {frame.Type} frame before the server answered its Hello."
                : $"The first frame must be Hello; the client sent {frame.Type}.");
        }

        HandshakeSettings client = HandshakeSettings.Parse(frame.Payload);
        if (client.Version != ProtocolConstants.Version)
        {
            RefuseHandshake($"This server speaks Mux protocol version {ProtocolConstants.Version}; the client asked for version {client.Version}. Use client and server builds of the same protocol version (update the older one's Mux package).");
            return;
        }

        if (_options.AuthToken is { } token && !IsToken(token, client.AuthToken))
        {
            RefuseHandshake("The handshake did not carry the auth token this server requires (MuxClientOptions.AuthToken).");
            return;
        }

        var info = new MuxConnectionInfo(PeerEndPoint, client.AuthToken, PeerCertificate);
        if (IsAuthenticated(_hostUser))
        {
            // The host's authentication (and its endpoint's authorization) stands in for Authenticate.
            SetPeer(info, _hostUser);
            AcceptHandshake(client);
            return;
        }

        if (_options.Authenticate is null)
        {
            SetPeer(info, null);
            AcceptHandshake(client);
            return;
        }

        // The application's code may wait (a database, a token service): never on the reader loop.
        // The client sends nothing before HelloAck, so nothing is read meanwhile; a frame that comes
        // anyway finds the handshake not done, and breaks the protocol as it would before Hello.
        _authenticating = true;
        _ = AuthenticateAsync(info, client);
    }

    /// <summary>Whether <paramref name="user"/> has an identity its host authenticated.</summary>
    private static bool IsAuthenticated(ClaimsPrincipal? user)
    {
        if (user is not null)
        {
            foreach (ClaimsIdentity identity in user.Identities)
            {
                if (identity.IsAuthenticated)
                {
                    return true;
                }
            }
        }

        return false;
    }

    /// <summary>Whether the client sent the server's token, in a time that does not depend on where
    /// a wrong one differs: an ordinal compare answers sooner the earlier a guess goes wrong, which a
    /// client can time to find the token a character at a time.</summary>
    private static bool IsToken(string token, string? sent) =>
        sent is not null && CryptographicOperations.FixedTimeEquals(MemoryMarshal.AsBytes(token.AsSpan()), MemoryMarshal.AsBytes(sent.AsSpan()));

    /// <summary>Answers the client's Hello with this server's settings: from here on the
    /// connection serves calls. On the reader loop, or after Authenticate, off it.</summary>
    private void AcceptHandshake(in HandshakeSettings client)
    {
        Incoming.RestartIdle(); // Before the handshake is done, which the idle check reads first.
        CompleteHandshake(client, readsTraceContext: false, client.ServerCallStreams); // A server's calls carry no headers.
        var settings = new HandshakeSettings(ProtocolConstants.Version, _options.MaxFrameSize, _options.MaxConcurrentCallsPerConnection, null) { StreamWindow = _options.StreamWindow, MaxMessageSize = _options.MaxMessageSize, MaxMetadataSize = MaxMetadataSize };
        TrySendFrame(FrameType.HelloAck, 0, ref settings); // Closed meanwhile: the client's connect fails with the close.
    }

    /// <summary>Runs MuxServerOptions.Authenticate on the thread pool, then accepts the handshake
    /// with the user it returned, or refuses the connection.</summary>
    private async Task AuthenticateAsync(MuxConnectionInfo info, HandshakeSettings client)
    {
        await Task.Yield(); // Off the reader loop before any of the application's code runs.
        ClaimsPrincipal? user;
        try
        {
            // _closing fires when the connection closes, which the handshake timeout does too.
            user = await _options.Authenticate!(info, _closing.Token).ConfigureAwait(false);
        }
        catch (MuxRemoteException refused)
        {
            RefuseAuthentication(refused.StatusCode == MuxStatusCode.Ok ? MuxStatusCode.Unauthenticated : refused.StatusCode, refused.Message, refused);
            return;
        }
        catch (Exception ex)
        {
            if (IsClosed)
            {
                return; // Closed meanwhile (the handshake timeout, a stop): its token cancelled it.
            }

            RefuseAuthentication(
                MuxStatusCode.Unauthenticated,
                _options.EnableDetailedErrors ? $"MuxServerOptions.Authenticate threw {ex.GetType().FullName}: {ex.Message}" : "The server could not authenticate the client (MuxServerOptions.Authenticate failed; the server's log has why).",
                ex);
            return;
        }

        if (user is null)
        {
            RefuseAuthentication(MuxStatusCode.Unauthenticated, "The server did not accept the client's credentials (MuxServerOptions.Authenticate returned no user).", null);
            return;
        }

        if (IsClosed)
        {
            return;
        }

        SetPeer(info, user);
        AcceptHandshake(client);
    }

    private void RefuseHandshake(string reason) => Refuse(MuxStatusCode.ProtocolError, reason, new MuxProtocolException(reason));

    /// <summary>Refuses a connection Authenticate did not accept, with a status the client's
    /// message names.</summary>
    private void RefuseAuthentication(MuxStatusCode status, string message, Exception? error)
    {
        if (error is not null and not MuxRemoteException)
        {
            ServerLog.AuthenticateFailed(Logger, Name, error);
        }

        Refuse(status, message, new MuxRemoteException(status, message, null));
    }

    private void Refuse(MuxStatusCode status, string reason, Exception error)
    {
        ServerLog.HandshakeRefused(Logger, Name, $"{status}: {reason}");

        // Cut if it is too long for the 4096 bytes the client takes before the handshake (a long
        // message of Authenticate's): it must still learn the status, and the connection close.
        TrySendError(FrameType.Error, 0, status, reason, null, FrameFlags.None);
        Close(MuxCloseReason.ProtocolError, error);
    }

    /// <summary>The server's deadlines, on the connection's timer (the keepalive's): the handshake
    /// timeout (<see cref="MuxServerOptions.HandshakeTimeout"/>, counted from the accept) until the
    /// handshake is done, and the idle close.</summary>
    protected override TimeSpan CheckDeadlines(long now)
    {
        TimeSpan handshakeLeft = IsHandshakeDone ? Timeout.InfiniteTimeSpan : _options.HandshakeTimeLeft(_acceptedAt, now);
        if (handshakeLeft == TimeSpan.Zero)
        {
            Close(MuxCloseReason.HandshakeTimeout, new TimeoutException($"The client did not complete the handshake within {DurationText.Format(_options.HandshakeTimeout)} (MuxServerOptions.HandshakeTimeout)."));
            return Timeout.InfiniteTimeSpan;
        }

        return Earlier(handshakeLeft, CheckIdle(now));
    }

    /// <summary>The idle close (<see cref="MuxServerOptions.IdleTimeout"/>): a connection that has
    /// held no call for that long since its handshake is told GoAway and drained. The handshake is
    /// the handshake timeout's: a slow Authenticate must not be closed as idle.</summary>
    private TimeSpan CheckIdle(long now)
    {
        if (!Incoming.TracksIdle || Incoming.IsGoingAway)
        {
            return Timeout.InfiniteTimeSpan;
        }

        if (Incoming.Count > 0 || !IsHandshakeDone)
        {
            // Busy, or not serving yet: the last call to finish, or the handshake, stamps the moment it becomes idle.
            return _options.IdleTimeout;
        }

        TimeSpan idle = TimeProvider.GetElapsedTime(Incoming.IdleSince, now);
        if (idle < _options.IdleTimeout)
        {
            return _options.IdleTimeout - idle;
        }

        // A request racing with this is on one side of GoAway's id or the other, as on shutdown.
        _ = CloseIdleAsync();
        return Timeout.InfiniteTimeSpan;
    }

    private async Task CloseIdleAsync()
    {
        // An infinite ShutdownTimeout makes a source that never cancels.
        using CancellationTokenSource patience = new(_options.ShutdownTimeout, TimeProvider);
        await DrainAndCloseAsync(patience.Token, MuxCloseReason.IdleTimeout).ConfigureAwait(false);
    }

    /// <summary>
    /// Closes without losing anything: sends GoAway with the highest call id received, serves every
    /// call up to that id (also ones still on their way), waits until they have finished and the
    /// client has ended its stream, then sends the last responses, shuts down the send side and
    /// closes. When <paramref name="cancellationToken"/> fires first, the handlers still running are
    /// cancelled and the connection closes at once. <paramref name="reason"/> is the close's
    /// (LocalShutdown, or IdleTimeout for the idle close).
    /// </summary>
    public async Task DrainAndCloseAsync(CancellationToken cancellationToken, MuxCloseReason reason = MuxCloseReason.LocalShutdown)
    {
        uint goAwayCallId = Incoming.BeginGoAway();
        bool finished = false;

        // Without a GoAway sent, nothing was promised on this connection (or it is already closed).
        if (IsHandshakeDone && TrySendGoAway(goAwayCallId))
        {
            try
            {
                await Incoming.Drained.WaitAsync(cancellationToken).ConfigureAwait(false);
                finished = true;
            }
            catch (OperationCanceledException)
            {
                // Out of patience: close now; the handlers still running are cancelled.
            }
        }

        // Finished: the client has already ended its stream, so nothing is left to read.
        CloseGracefully(reason, finished ? DefaultDrainTimeout : TimeSpan.Zero);
        await Completion.ConfigureAwait(false);
    }

    private bool TrySendGoAway(uint goAwayCallId)
    {
        Span<byte> payload = stackalloc byte[ProtocolConstants.GoAwayPayloadSize];
        BinaryPrimitives.WriteUInt32LittleEndian(payload, goAwayCallId);
        return TrySendRawFrame(FrameType.GoAway, 0, payload);
    }

    /// <summary>Cancels Authenticate's token, which runs what the application registered on it
    /// here, on the closing thread (a stop, the reader loop, the handshake timeout's timer).</summary>
    protected override void OnClosing(MuxConnectionException error)
    {
        try
        {
            _closing.Cancel();
        }
        catch (AggregateException ex)
        {
            // Authenticate's code failed, late: it must not fail the close (nor, thrown on a
            // timer, the process).
            ServerLog.AuthenticateFailed(Logger, Name, ex);
        }
    }
}
