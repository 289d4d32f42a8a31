using System.Buffers.Binary;
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

    // Cancelled on close, to end the handshake timer.
    private readonly CancellationTokenSource _closing = new();

    // Whether MuxServerOptions.IdleTimeout is on. Immutable.
    private readonly bool _closesWhenIdle;

    // TimeProvider timestamp of the accept: the handshake timeout counts from it, since the
    // server lists the connection a moment before it starts it. Immutable.
    private readonly long _acceptedAt;

    // What handlers call the client through; created on first use, set only through CompareExchange.
    private MuxRemoteClient? _remoteClient;

    public ServerConnection(IMuxTransport transport, ServiceMethods methods, MuxServerOptions options, ILogger logger, string name)
        : base(transport, options.MaxFrameSize, logger, name, isServer: true)
    {
        _options = options;
        TimeProvider = options.TimeProvider;
        KeepAliveInterval = options.KeepAliveInterval;
        KeepAliveTimeout = options.KeepAliveTimeout;
        MaxQueuedOutboundBytes = options.MaxOutboundBytesPerConnection;
        StreamWindow = options.StreamWindow;
        MaxMessageSize = options.MaxMessageSize;
        FragmentSize = options.FragmentSize;
        MaxMessagesInProgress = options.MaxConcurrentCallsPerConnection; // A client keeps at most that many calls outstanding.
        SerializerOptions = MuxSerializerOptions.ForServer(options.SerializerOptions);
        _closesWhenIdle = options.IdleTimeout != Timeout.InfiniteTimeSpan;
        _acceptedAt = TimeProvider.GetTimestamp();
        Outgoing = new OutgoingCalls(this, options.ClientCallTimeout);
        Incoming = new IncomingCalls(this, methods, options.MaxConcurrentCallsPerConnection)
        {
            SendsDetailedErrors = options.EnableDetailedErrors,
            PropagatesCallContext = options.EnableCallContextPropagation,
            IsObserved = true,
            TracksIdle = _closesWhenIdle,
        };

        if (options.EnableCallContextPropagation)
        {
            MuxCallContext.EnablePropagation();
        }
    }

    /// <summary>The client at the other end, for handlers to call back.</summary>
    internal MuxRemoteClient RemoteClient =>
        Volatile.Read(ref _remoteClient) ?? Interlocked.CompareExchange(ref _remoteClient, new MuxRemoteClient(this, _options.ClientCallTimeout), null) ?? _remoteClient!;

    /// <summary>The client's calls running now.</summary>
    public int RunningCalls => Incoming.Count;

    /// <summary>Whether GoAway was sent: the connection is draining (for tests and diagnostics).</summary>
    internal bool IsGoingAway => Incoming.IsGoingAway;

    /// <summary>The highest call id received so far (for tests and diagnostics).</summary>
    internal uint HighestReceivedCallId => Incoming.HighestReceivedCallId;

    /// <summary>Whether the reader loop has stopped taking requests because the client does not
    /// read the answers (for tests and diagnostics).</summary>
    internal bool IsWaitingForOutboundRoom => Incoming.IsWaitingForOutboundRoom;

    /// <summary>A drain ends when the last call has queued its response, not when the response
    /// has been written: the close must still send it.</summary>
    protected override bool SendsQueuedFramesOnGracefulClose => true;

    /// <summary>Starts the loops and the handshake timeout (counted from the accept).</summary>
    public void Start()
    {
        StartLoops();
        if (_options.HandshakeTimeout != Timeout.InfiniteTimeSpan)
        {
            _ = EnforceHandshakeTimeoutAsync();
        }
    }

    private async Task EnforceHandshakeTimeoutAsync()
    {
        TimeSpan left = _options.HandshakeTimeout - TimeProvider.GetElapsedTime(_acceptedAt);
        try
        {
            if (left > TimeSpan.Zero)
            {
                await Task.Delay(left, TimeProvider, _closing.Token).ConfigureAwait(false);
            }
        }
        catch (OperationCanceledException)
        {
            return; // Closed first.
        }

        if (!IsHandshakeDone)
        {
            Close(MuxCloseReason.HandshakeTimeout, new TimeoutException($"The client did not complete the handshake within {DurationText.Format(_options.HandshakeTimeout)} (MuxServerOptions.HandshakeTimeout)."));
        }
    }

    /// <summary>The client's Hello: checks the version and token, answers HelloAck with this
    /// server's settings, or refuses the connection.</summary>
    protected override void OnHandshakeFrame(in Frame frame)
    {
        if (frame.Type != FrameType.Hello)
        {
            throw new MuxProtocolException($"The first frame must be Hello; the client sent {frame.Type}.");
        }

        HandshakeSettings client = HandshakeSettings.Parse(frame.Payload);
        if (client.Version != ProtocolConstants.Version)
        {
            RefuseHandshake($"This server speaks Mux protocol version {ProtocolConstants.Version}; the client asked for version {client.Version}. Use client and server builds of the same protocol version (update the older one's Mux package).");
            return;
        }

        if (_options.AuthToken is not null && !string.Equals(_options.AuthToken, client.AuthToken, StringComparison.Ordinal))
        {
            RefuseHandshake("The handshake did not carry the auth token this server requires (MuxClientOptions.AuthToken).");
            return;
        }

        OnPeerSettings(client);
        Outgoing.OnPeerSettings(client.MaxConcurrentCalls, readsTraceContext: false, client.ServerCallStreams); // A server's calls carry no headers.
        IsHandshakeDone = true;
        var body = new HelloBody(new HandshakeSettings(ProtocolConstants.Version, _options.MaxFrameSize, _options.MaxConcurrentCallsPerConnection, null) { StreamWindow = _options.StreamWindow, MaxMessageSize = _options.MaxMessageSize });
        SendFrame(FrameType.HelloAck, 0, 0, ref body);
    }

    private void RefuseHandshake(string reason)
    {
        ServerLog.HandshakeRefused(Logger, Name, reason);
        var body = new ErrorBody(MuxStatusCode.ProtocolError, reason, null);
        SendFrame(FrameType.Error, 0, 0, ref body);
        Close(MuxCloseReason.ProtocolError, new MuxProtocolException(reason));
    }

    /// <summary>The idle close (<see cref="MuxServerOptions.IdleTimeout"/>), on the connection's
    /// timer: a connection that has held no call for that long is told GoAway and drained.</summary>
    protected override TimeSpan CheckDeadlines(long now)
    {
        if (!_closesWhenIdle || Incoming.IsGoingAway)
        {
            return Timeout.InfiniteTimeSpan;
        }

        if (Incoming.Count > 0)
        {
            return _options.IdleTimeout; // Busy: the last call to finish stamps the moment it becomes idle.
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
        using CancellationTokenSource patience = _options.ShutdownTimeout == Timeout.InfiniteTimeSpan
            ? new CancellationTokenSource()
            : new CancellationTokenSource(_options.ShutdownTimeout, TimeProvider);
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
        if (!IsHandshakeDone || !TrySendGoAway(goAwayCallId))
        {
            // Nothing was promised on this connection (or it is already closed).
            CloseGracefully(reason, TimeSpan.Zero);
            await Completion.ConfigureAwait(false);
            return;
        }

        bool finished;
        try
        {
            await Incoming.Drained.WaitAsync(cancellationToken).ConfigureAwait(false);
            finished = true;
        }
        catch (OperationCanceledException)
        {
            finished = false; // Out of patience: close now; the handlers still running are cancelled.
        }

        // Finished: the client has already ended its stream, so nothing is left to read.
        CloseGracefully(reason, finished ? DefaultDrainTimeout : TimeSpan.Zero);
        await Completion.ConfigureAwait(false);
    }

    private bool TrySendGoAway(uint goAwayCallId)
    {
        Span<byte> payload = stackalloc byte[ProtocolConstants.GoAwayPayloadSize];
        BinaryPrimitives.WriteUInt32LittleEndian(payload, goAwayCallId);
        try
        {
            SendRawFrame(FrameType.GoAway, 0, payload);
            return true;
        }
        catch (MuxConnectionException)
        {
            return false;
        }
    }

    protected override void OnClosing(MuxConnectionException error) => _closing.Cancel();
}
