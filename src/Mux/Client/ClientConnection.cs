using System.Buffers;
using System.Net;
using Microsoft.Extensions.Logging;
using Mux.Connection;
using Mux.Diagnostics;
using Mux.Protocol;
using Mux.Serialization;
using Mux.Transport;

namespace Mux.Client;

/// <summary>
/// The client's end of a connection: the engine's two roles (<see cref="MuxConnection.Outgoing"/>
/// for the calls it makes, <see cref="MuxConnection.Incoming"/> for the calls its server starts),
/// plus what only a client does: the handshake as the side that connects, and closing once a
/// server that sent GoAway has answered every call it promised to.
/// </summary>
internal sealed class ClientConnection : MuxConnection
{
    // Completed by HelloAck (or failed by a refusal or close). Continuations run asynchronously so
    // that ConnectAsync's caller never runs on the reader loop.
    private readonly TaskCompletionSource _handshake = new(TaskCreationOptions.RunContinuationsAsynchronously);

    private ClientConnection(IMuxTransport transport, MuxClientOptions options, ServiceMethods services, ILogger logger, string name)
        : base(transport, options.MaxFrameSize, logger, name, isServer: false)
    {
        TimeProvider = options.TimeProvider;
        KeepAliveInterval = options.KeepAliveInterval;
        KeepAliveTimeout = options.KeepAliveTimeout;
        MaxQueuedOutboundBytes = options.MaxOutboundBytesPerConnection;
        StreamWindow = options.StreamWindow;
        MaxMessageSize = options.MaxMessageSize;
        MaxMetadataSize = OptionsValidation.EffectiveMetadataSize(options.MaxMetadataSize, options.MaxMessageSize);
        FragmentSize = options.FragmentSize;
        SerializerOptions = MuxSerializerOptions.ForClient(options.SerializerOptions);
        Outgoing = new OutgoingCalls(this, options.CallTimeout);

        // A client announces no cap of its own (int.MaxValue in its Hello): its server's calls are
        // bounded by the server's own handlers.
        Incoming = new IncomingCalls(this, services, int.MaxValue);
    }

    /// <summary>Whether new calls can be sent: open, and no GoAway received.</summary>
    public bool IsUsable => !Outgoing.IsGoingAway && !IsClosed;

    /// <summary>Calls waiting for their answer now.</summary>
    public int PendingCallCount => Outgoing.Count;

    /// <summary>The server's socket address; null in memory.</summary>
    public EndPoint? RemoteEndPoint => PeerEndPoint;

    /// <summary>Opens a connection to <paramref name="endPoint"/>: the transport (socket, TLS), then
    /// the handshake. Used for the first connection and for every reconnect.</summary>
    /// <exception cref="MuxConnectionException">The server refused, did not answer within
    /// <see cref="MuxClientOptions.ConnectTimeout"/>, failed TLS, or is not a Mux server.</exception>
    public static async Task<ClientConnection> OpenAsync(EndPoint endPoint, MuxClientOptions options, ServiceMethods services, ILogger logger, CancellationToken cancellationToken)
    {
        // One ConnectTimeout for the transport and the handshake: the handshake gets what the socket
        // and TLS left of it, or a server slow at both would be given twice the timeout.
        long deadline = ClockDeadline.After(options.TimeProvider, options.ConnectTimeout);
        IMuxTransport transport = await ClientTransport.ConnectAsync(endPoint, options, logger, cancellationToken).ConfigureAwait(false);
        return await ConnectAsync(transport, options, services, logger, endPoint.ToString() ?? "server", cancellationToken, deadline, ServerPeer.From(endPoint)).ConfigureAwait(false);
    }

    /// <summary>Starts the loops, sends Hello, and waits for the server's HelloAck until
    /// <paramref name="deadline"/> (a <see cref="ClockDeadline"/> timestamp; by default ConnectTimeout
    /// from now).</summary>
    // services: what the connection serves to calls the server starts (its MuxClient's). peer: the
    // server's address and port, which the connection is counted and its calls measured under
    // (null in memory and over a given transport); set before the start, which counts it open.
    public static async Task<ClientConnection> ConnectAsync(IMuxTransport transport, MuxClientOptions options, ServiceMethods services, ILogger logger, string name, CancellationToken cancellationToken, long? deadline = null, ServerPeer? peer = null)
    {
        // Zero once the deadline has passed: the wait then times out at once.
        _ = ClockDeadline.TryGetRemaining(options.TimeProvider, deadline ?? ClockDeadline.After(options.TimeProvider, options.ConnectTimeout), out TimeSpan wait);
        var connection = new ClientConnection(transport, options, services, logger, name);
        connection.Outgoing.Peer = peer;
        connection.StartLoops();
        try
        {
            var settings = new HandshakeSettings(ProtocolConstants.Version, options.MaxFrameSize, int.MaxValue, options.AuthToken) { StreamWindow = options.StreamWindow, MaxMessageSize = options.MaxMessageSize, MaxMetadataSize = connection.MaxMetadataSize };
            // The wait, and with it the timeout's timer, starts before Hello goes out: a server that
            // answers, or a clock that moves, the moment Hello arrives must find the timer running.
            Task answered = connection._handshake.Task.WaitAsync(wait, options.TimeProvider, cancellationToken);
            try
            {
                connection.Outbound.SendFrame(FrameType.Hello, 0, 0, ref settings);
            }
            catch
            {
                // The close that follows faults the wait: observed here, as nothing awaits it now.
                _ = answered.ContinueWith(static task => task.Exception, CancellationToken.None, TaskContinuationOptions.OnlyOnFaulted | TaskContinuationOptions.ExecuteSynchronously, TaskScheduler.Default);
                throw;
            }

            await answered.ConfigureAwait(false);
            return connection;
        }
        catch (TimeoutException ex)
        {
            connection.Close(MuxCloseReason.HandshakeTimeout, ex);
            await connection.Completion.ConfigureAwait(false);
            throw new MuxConnectionException($"The Mux server at {name} did not answer the handshake within {DurationText.Format(options.ConnectTimeout)} (MuxClientOptions.ConnectTimeout).", MuxCloseReason.HandshakeTimeout, ex);
        }
        catch (Exception ex)
        {
            // Cancelled (the client is being disposed) or refused. No call rides on a connection
            // whose handshake never completed, so it is dropped, not drained: a graceful close would
            // wait for a server that may never answer (forever on a clock that does not move).
            connection.Abort(MuxCloseReason.LocalShutdown, ex is OperationCanceledException ? null : ex);
            await connection.Completion.ConfigureAwait(false);
            throw;
        }
    }

    /// <summary>The server's HelloAck (its settings), or its refusal (a connection-level Error).</summary>
    internal override void OnHandshakeFrame(in Frame frame)
    {
        if (frame.Type == FrameType.Error && frame.CallId == 0)
        {
            OnConnectionError(frame);
            return;
        }

        if (frame.Type != FrameType.HelloAck)
        {
            throw new MuxProtocolException($"The server's first frame must be HelloAck (or an Error refusing the connection); it sent {frame.Type}.");
        }

        HandshakeSettings settings = HandshakeSettings.Parse(frame.Payload, out bool serverReadsTraceContext);
        if (settings.Version != ProtocolConstants.Version)
        {
            throw new MuxProtocolException($"The server answered with protocol version {settings.Version}; this client speaks version {ProtocolConstants.Version}.");
        }

        CompleteHandshake(settings, serverReadsTraceContext, takesStreams: true);
        _handshake.TrySetResult();
    }

    /// <summary>A connection-level error (call id 0): the server refused the handshake or is closing.</summary>
    internal override void OnConnectionError(in Frame frame)
    {
        ErrorBody error = ErrorBody.Read(frame.Payload.ToArray());
        // A refusal by the server's Authenticate names its status (Unauthenticated, PermissionDenied, ...).
        string status = error.Code == MuxStatusCode.ProtocolError ? string.Empty : $" ({error.Code})";
        var exception = new MuxConnectionException($"The Mux server at {Name} refused the connection{status}: {error.Message}", MuxCloseReason.ProtocolError, new MuxRemoteException(error.Code, error.Message, error.RemoteType));
        _handshake.TrySetException(exception);
        Close(MuxCloseReason.ProtocolError, exception.InnerException);
    }

    /// <summary>After GoAway, the connection closes (gracefully) once the last call the server
    /// promised to serve has completed; the client's next calls go to a new connection.</summary>
    internal override void OnCallsDrainedAfterGoAway() => CloseGracefully(MuxCloseReason.GoAway, DefaultDrainTimeout);

    protected override void OnClosing(MuxConnectionException error) => _handshake.TrySetException(error);
}
