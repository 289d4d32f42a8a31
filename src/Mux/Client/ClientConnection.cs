using System.Buffers;
using System.Net;
using Microsoft.Extensions.Logging;
using Mux.Connection;
using Mux.Diagnostics;
using Mux.Protocol;
using Mux.Transport;

namespace Mux.Client;

/// <summary>
/// The client's end of a connection: the engine, plus what only a client does: the handshake as the side that connects, and closing once a
/// server that sent GoAway has answered every call it promised to.
/// </summary>
internal sealed class ClientConnection : MuxConnection
{
    // Completed by HelloAck, or failed by a refusal or the close. Asynchronous continuations: ConnectAsync's caller must never run on the
    // reader loop.
    private readonly TaskCompletionSource _handshake = new(TaskCreationOptions.RunContinuationsAsynchronously);

    private ClientConnection(IMuxTransport transport, ConnectionSettings settings, ServiceMethods services, ILogger logger, string name)
        : base(transport, settings, services, logger, name)
    {
    }

    /// <summary>Whether new calls can be sent: open, and no GoAway received.</summary>
    public bool IsUsable => !Outgoing.IsGoingAway && !IsClosed;

    public int PendingCallCount => Outgoing.Count;

    // Calls the server refused unrun (Overloaded, TooManyCalls) since _refusalsSince, a timestamp of the client's clock; reset once a
    // second has passed. Written by the callers that saw a refusal, read by the balancer's pick.
    private int _recentRefusals;
    private long _refusalsSince;

    /// <summary>How busy the instance looks to the balancer: its pending calls, plus the calls it refused in the last second, so that an
    /// instance that sheds load gets fewer calls. The clock is read only while it has refused lately.</summary>
    public int Load
    {
        get
        {
            int refusals = Volatile.Read(ref _recentRefusals);
            if (refusals != 0 && TimeProvider.GetElapsedTime(Volatile.Read(ref _refusalsSince)) >= TimeSpan.FromSeconds(1))
            {
                refusals = 0;
            }

            return PendingCallCount + refusals;
        }
    }

    /// <summary>The server refused a call unrun at <paramref name="now"/>.</summary>
    public void OnRefused(long now)
    {
        if (TimeProvider.GetElapsedTime(Volatile.Read(ref _refusalsSince), now) >= TimeSpan.FromSeconds(1))
        {
            // A new second of refusals: racing writers may each restart it, which loses a few counts, never the instance's turn.
            Volatile.Write(ref _refusalsSince, now);
            Volatile.Write(ref _recentRefusals, 0);
        }

        Interlocked.Increment(ref _recentRefusals);
    }

    // Null in memory.
    public EndPoint? RemoteEndPoint => PeerEndPoint;

    /// <summary>Opens a connection to <paramref name="endPoint"/>: the transport (socket, TLS), then the handshake. For the first
    /// connection and every reconnect.</summary>
    /// <exception cref="MuxConnectionException">The server refused, did not answer within <see cref="MuxClientOptions.ConnectTimeout"/>,
    /// failed TLS, or is not a Mux server.</exception>
    public static async Task<ClientConnection> OpenAsync(
        EndPoint endPoint, MuxClientOptions options, ConnectionSettings settings, ServiceMethods services, ILogger logger,
        CancellationToken cancellationToken)
    {
        // One ConnectTimeout for the transport and the handshake, or a server slow at both would be given twice the timeout.
        long deadline = ClockDeadline.After(settings.TimeProvider, options.ConnectTimeout);
        IMuxTransport transport = await ClientTransport.ConnectAsync(endPoint, options, logger, cancellationToken).ConfigureAwait(false);
        string name = endPoint.ToString() ?? "server";
        return await ConnectAsync(transport, options, settings, services, logger, name, cancellationToken, deadline, ServerPeer.From(endPoint))
            .ConfigureAwait(false);
    }

    /// <summary>Starts the loops, sends Hello, and waits for the server's HelloAck until <paramref name="deadline"/> (a
    /// <see cref="ClockDeadline"/> timestamp; by default ConnectTimeout from now).</summary>
    // services: what the connection serves to the server's calls. peer: the server's address and port, which the connection is counted and
    // its calls measured under (null in memory); set before the start, which counts it open.
    public static async Task<ClientConnection> ConnectAsync(
        IMuxTransport transport, MuxClientOptions options, ConnectionSettings settings, ServiceMethods services, ILogger logger, string name,
        CancellationToken cancellationToken, long? deadline = null, ServerPeer? peer = null)
    {
        TimeProvider clock = settings.TimeProvider;
        deadline ??= ClockDeadline.After(clock, options.ConnectTimeout);
        _ = ClockDeadline.TryGetRemaining(clock, deadline.Value, out TimeSpan wait); // Zero once the deadline has passed.
        var connection = new ClientConnection(transport, settings, services, logger, name);
        connection.Outgoing.Peer = peer;
        connection.StartLoops();
        try
        {
            HandshakeSettings hello = settings.Announce(options.AuthToken);

            // The wait, and with it the timeout's timer, starts before Hello goes out: a server that answers, or a clock that moves, the
            // moment Hello arrives must find the timer running.
            Task answered = connection._handshake.Task.WaitAsync(wait, clock, cancellationToken);
            try
            {
                connection.Outbound.SendFrame(FrameType.Hello, 0, 0, ref hello);
            }
            catch
            {
                // The close that follows faults the wait: observed here, as nothing awaits it now.
                _ = answered.ContinueWith(
                    static task => task.Exception,
                    CancellationToken.None,
                    TaskContinuationOptions.OnlyOnFaulted | TaskContinuationOptions.ExecuteSynchronously,
                    TaskScheduler.Default);
                throw;
            }

            await answered.ConfigureAwait(false);
            return connection;
        }
        catch (TimeoutException ex)
        {
            connection.Close(MuxCloseReason.HandshakeTimeout, ex);
            await connection.Completion.ConfigureAwait(false);
            throw new MuxConnectionException(
                $"The Mux server at {name} did not answer the handshake within {DurationText.Format(options.ConnectTimeout)} " +
                "(MuxClientOptions.ConnectTimeout).",
                MuxCloseReason.HandshakeTimeout,
                ex);
        }
        catch (Exception ex)
        {
            // Cancelled (the client is being disposed) or refused. No call rides on a connection whose handshake never completed, so it is
            // dropped: a graceful close would wait for a server that may never answer.
            connection.Abort(MuxCloseReason.LocalShutdown, ex is OperationCanceledException ? null : ex);
            await connection.Completion.ConfigureAwait(false);
            throw;
        }
    }

    // The server's HelloAck, or its refusal.
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

        HandshakeSettings server = HandshakeSettings.Parse(frame.Payload, out bool serverReadsTraceContext);
        if (server.Version != ProtocolConstants.Version)
        {
            throw new MuxProtocolException(
                $"The server answered with protocol version {server.Version}; this client speaks version {ProtocolConstants.Version}.");
        }

        CompleteHandshake(PeerSettings.From(server, serverReadsTraceContext, takesStreams: true));
        _handshake.TrySetResult();
    }

    // The server refused the handshake or is closing.
    internal override void OnConnectionError(in Frame frame)
    {
        ErrorBody error = ErrorBody.Read(frame.Payload.ToArray());

        // A refusal by the server's Authenticate names its status (Unauthenticated, PermissionDenied, ...).
        string status = error.Code == MuxStatusCode.ProtocolError ? string.Empty : $" ({error.Code})";
        var exception = new MuxConnectionException(
            $"The Mux server at {Name} refused the connection{status}: {error.Message}",
            MuxCloseReason.ProtocolError,
            new MuxRemoteException(error.Code, error.Message, error.RemoteType));
        _handshake.TrySetException(exception);
        Close(MuxCloseReason.ProtocolError, exception.InnerException);
    }

    // The client's next calls go to a new connection.
    internal override void OnCallsDrainedAfterGoAway() => CloseGracefully(MuxCloseReason.GoAway, DefaultDrainTimeout);

    protected override void OnClosing(MuxConnectionException error) => _handshake.TrySetException(error);
}
