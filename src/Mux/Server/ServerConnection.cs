using System.Buffers.Binary;
using System.Runtime.InteropServices;
using System.Security.Claims;
using System.Security.Cryptography;
using Microsoft.Extensions.Logging;
using Mux.Connection;
using Mux.Protocol;
using Mux.Transport;

namespace Mux.Server;

/// <summary>
/// What only a server does: the handshake as the side that accepts (and its timeout), the host's user in place of
/// Authenticate, the idle close, and the drain with GoAway on shutdown.
/// </summary>
internal sealed class ServerConnection : MuxConnection
{
    // The server-only options: the token, Authenticate, and the handshake, idle and shutdown timeouts.
    private readonly MuxServerOptions _options;

    // Cancelled on close: the token Authenticate runs with.
    private readonly CancellationTokenSource _closing = new();

    // The handshake timeout counts from the accept, since the server lists the connection a moment before it starts it.
    private readonly long _acceptedAt;

    // The user the connection's host authenticated (ASP.NET Core's, for a WebSocket), if any.
    private readonly ClaimsPrincipal? _hostUser;

    // What handlers call the client through; created on first use, set only through CompareExchange.
    private MuxRemoteClient? _remoteClient;

    // Set by the reader loop when it hands the client's Hello to Authenticate: another frame before the HelloAck breaks the
    // protocol. Reader loop only.
    private bool _authenticating;

    // hostUser: when it has an authenticated identity, it is the connection's user, and Authenticate is not run.
    public ServerConnection(
        IMuxTransport transport, ConnectionSettings settings, ServiceMethods methods, MuxServerOptions options, ILogger logger, string name,
        ClaimsPrincipal? hostUser = null)
        : base(transport, settings, methods, logger, name)
    {
        _options = options;
        _hostUser = hostUser;
        _acceptedAt = TimeProvider.GetTimestamp();
    }

    internal MuxRemoteClient RemoteClient =>
        Volatile.Read(ref _remoteClient)
        ?? Interlocked.CompareExchange(ref _remoteClient, new MuxRemoteClient(this, Settings.CallTimeout), null)
        ?? _remoteClient!;

    // With the handshake timeout on the connection's timer.
    public void Start() => StartLoops();

    // The client's Hello: checks the version and token, then answers HelloAck or refuses the connection.
    internal override void OnHandshakeFrame(in Frame frame)
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
            RefuseHandshake(
                $"This server speaks Mux protocol version {ProtocolConstants.Version}; the client asked for version {client.Version}. " +
                "Use client and server builds of the same protocol version (update the older one's Mux package).");
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

        // The application's code may wait (a database, a token service): never on the reader loop. The client sends nothing
        // before HelloAck; a frame that comes anyway finds the handshake not done, and breaks the protocol.
        _authenticating = true;
        _ = AuthenticateAsync(info, client);
    }

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

    // In a time that does not depend on where a wrong token differs: an ordinal compare answers sooner the earlier a guess
    // goes wrong, which a client can time to find the token a character at a time.
    private static bool IsToken(string token, string? sent) =>
        sent is not null
        && CryptographicOperations.FixedTimeEquals(MemoryMarshal.AsBytes(token.AsSpan()), MemoryMarshal.AsBytes(sent.AsSpan()));

    // From here on the connection serves calls. On the reader loop, or off it after Authenticate.
    private void AcceptHandshake(in HandshakeSettings client)
    {
        Incoming.RestartIdle(); // Before the handshake is done, which the idle check reads first.
        // A server's calls carry no headers.
        CompleteHandshake(PeerSettings.From(client, readsTraceContext: false, client.ServerCallStreams), Settings.Announce(authToken: null));
    }

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
            MuxStatusCode status = refused.StatusCode == MuxStatusCode.Ok ? MuxStatusCode.Unauthenticated : refused.StatusCode;
            RefuseAuthentication(status, refused.Message, refused);
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
                Settings.SendsDetailedErrors
                    ? $"MuxServerOptions.Authenticate threw {ex.GetType().FullName}: {ex.Message}"
                    : "The server could not authenticate the client (MuxServerOptions.Authenticate failed; the server's log has why).",
                ex);
            return;
        }

        if (user is null)
        {
            RefuseAuthentication(
                MuxStatusCode.Unauthenticated,
                "The server did not accept the client's credentials (MuxServerOptions.Authenticate returned no user).",
                null);
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

        // Cut if too long for the 4096 bytes the client takes before the handshake: it must still learn the status.
        Outbound.TrySendError(FrameType.Error, 0, status, reason, null, FrameFlags.None);
        Close(MuxCloseReason.ProtocolError, error);
    }

    // The handshake timeout, counted from the accept, until the handshake is done; then the idle close.
    protected override TimeSpan CheckDeadlines(long now)
    {
        // The reader's flag, set before the HelloAck is queued: a client may have read its HelloAck before this side marks
        // the handshake answered, and a handshake it completed in time is never timed out.
        TimeSpan handshakeLeft = Inbound.IsHandshakeDone ? Timeout.InfiniteTimeSpan : _options.HandshakeTimeLeft(_acceptedAt, now);
        if (handshakeLeft == TimeSpan.Zero)
        {
            Close(MuxCloseReason.HandshakeTimeout, new TimeoutException(
                $"The client did not complete the handshake within {DurationText.Format(_options.HandshakeTimeout)} " +
                "(MuxServerOptions.HandshakeTimeout)."));
            return Timeout.InfiniteTimeSpan;
        }

        return Earlier(handshakeLeft, CheckIdle(now));
    }

    // A connection that has held no call for IdleTimeout since its handshake is told GoAway and drained. Until the
    // handshake the handshake timeout rules: a slow Authenticate must not be closed as idle.
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
    /// Sends GoAway with the highest call id received, serves every call up to it (ones still on their way too), waits for
    /// them and for the client to end its stream, then closes. <paramref name="cancellationToken"/> bounds it all: when it
    /// fires, running handlers are cancelled and the connection is dropped.
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
                // Out of patience: drop it now (below); the handlers still running are cancelled.
            }
        }

        if (finished)
        {
            // The client has already ended its stream, so nothing is left to read.
            CloseGracefully(reason, DefaultDrainTimeout);
        }
        else if (!IsClosed)
        {
            // Out of patience, or nothing was promised: nothing is worth waiting for.
            Abort(reason, null);
        }

        try
        {
            await Completion.WaitAsync(cancellationToken).ConfigureAwait(false);
        }
        catch (OperationCanceledException)
        {
            // Out of patience while the close still waits for the client to end its stream, or to take what was sent.
            Abort(reason, null);
            await Completion.ConfigureAwait(false);
        }
    }

    private bool TrySendGoAway(uint goAwayCallId)
    {
        Span<byte> payload = stackalloc byte[ProtocolConstants.GoAwayPayloadSize];
        BinaryPrimitives.WriteUInt32LittleEndian(payload, goAwayCallId);
        return Outbound.TrySendRawFrame(FrameType.GoAway, 0, payload);
    }

    // Cancels Authenticate's token, which runs what the application registered on it here, on the closing thread.
    protected override void OnClosing(MuxConnectionException error)
    {
        try
        {
            _closing.Cancel();
        }
        catch (AggregateException ex)
        {
            // Authenticate's code failed, late: it must not fail the close (nor, thrown on a timer, the process).
            ServerLog.AuthenticateFailed(Logger, Name, ex);
        }
    }
}
