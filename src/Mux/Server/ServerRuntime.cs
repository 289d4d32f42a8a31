using System.Collections.Concurrent;
using System.IO.Pipelines;
using System.Net;
using System.Net.Security;
using System.Net.Sockets;
using System.Net.WebSockets;
using System.Security.Claims;
using System.Security.Cryptography.X509Certificates;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Logging.Abstractions;
using Mux.Connection;
using Mux.Transport;

namespace Mux.Server;

/// <summary>The services, the accept loop, the open connections, and the stop that drains them all with GoAway.</summary>
internal sealed class ServerRuntime
{
    private readonly MuxServerOptions _options;
    private readonly ILogger _logger;

    // What the server serves, by method id. Filled by AddService before start.
    private readonly ServiceMethods _methods = new();

    // Open connections. Added by the accept loop, removed when each one closes.
    private readonly ConcurrentDictionary<ServerConnection, byte> _connections = new();

    // Set by StartAsync under _gate unless a stop came first; taken under _gate by StopAsync, or by the accept loop when it
    // gives up, so that exactly one of them closes the listener.
    private Socket? _listener;
    private readonly Lock _gate = new();

    // Cancelled by StopAsync: ends the TLS handshakes still running (no connection yet) and the accept loop's retry wait.
    private readonly CancellationTokenSource _stopping = new();

    // Cancelled by the token of any StopAsync: ends the drain's wait for the calls in flight.
    private readonly CancellationTokenSource _outOfPatience = new();

    // Completed when the first StopAsync has finished; a later one waits for it.
    private readonly TaskCompletionSource _stopped = new(TaskCreationOptions.RunContinuationsAsynchronously);

    // TLS handshakes in flight, each completed when it ends; StopAsync waits for them.
    private readonly ConcurrentDictionary<TaskCompletionSource, byte> _handshakes = new();

    // Accepts between their check that the server runs and their connection's start, with Interlocked. StopAsync waits for
    // them (_acceptsEnded, completed by whichever of the stop and the last of them sees the other) before it drains: an
    // accept that passed its check as the stop began must not list its connection after the drain has looked.
    private int _accepting;
    private readonly TaskCompletionSource _acceptsEnded = new(TaskCreationOptions.RunContinuationsAsynchronously);

    // Set once by StartAsync under _gate (after _state became 1); read by StopAsync and IsListening.
    private Task? _acceptLoop;
    private long _connectionsAccepted;

    // 0 = not started, 1 = running, 2 = stopping or stopped. Changed with Interlocked.
    private int _state;

    // The options mapped into the engine as the server started: written before _state becomes 1, read by every connection.
    private ConnectionSettings? _settings;

    public ServerRuntime(MuxServerOptions options)
    {
        ArgumentNullException.ThrowIfNull(options);
        _options = options;
        // Guarded: a logger that throws must not end the accept loop or fail a start or a stop.
        _logger = GuardedLogger.Wrap((options.LoggerFactory ?? NullLoggerFactory.Instance).CreateLogger("Mux.Server"));
    }

    public EndPoint? LocalEndPoint { get; private set; }

    public long ConnectionsAccepted => Interlocked.Read(ref _connectionsAccepted);

    public int ActiveConnections => _connections.Count;

    public int CallsRunningUnderCap => Volatile.Read(ref _settings)?.ServerCallLimit?.Running ?? 0;

    public long CallsRefusedOverloaded => Volatile.Read(ref _settings)?.ServerCallLimit?.Refused ?? 0;

    public ICollection<ServerConnection> Connections => _connections.Keys;

    // A server whose connections come only from its host's endpoints accepts them while it runs.
    public bool IsListening =>
        Volatile.Read(ref _state) == 1 && (_acceptLoop is { IsCompleted: false } || (_options.EndPoint is null && _options.ServesHostEndpoints));

    // Tests replace it to make accepting fail as the operating system can (out of file descriptors, an aborted backlog).
    public Func<Socket, ValueTask<Socket>> AcceptSocket { get; set; } = static listener => listener.AcceptAsync(CancellationToken.None);

    public void AddMethods<TService>(Func<string, MuxMethodDefinition<TService>, ServiceMethod> bind)
        where TService : class
    {
        if (Volatile.Read(ref _state) != 0)
        {
            throw new InvalidOperationException("Services must be added before the Mux server starts.");
        }

        _methods.Add(
            bind,
            static (existing, added) =>
                $"{existing.Name} and {added.Name} have the same method id 0x{added.Id:x8}; a server cannot serve both. Rename one of them.");
    }

    public Task StartAsync()
    {
        if (_options.EndPoint is null && _options.ServesHostEndpoints)
        {
            StartWithoutListener();
            ServerLog.ServerStarted(_logger, "its host's endpoints only (no EndPoint)");
            return Task.CompletedTask;
        }

        Begin(requireEndPoint: true);
        EndPoint endPoint = _options.EndPoint!;
        Socket? listener = null;
        try
        {
            listener = SocketEndPoints.CreateSocket(endPoint);
            listener.Bind(endPoint); // Throws when the port is in use, or a Unix domain socket file is already there.
            listener.Listen(_options.ListenBacklog);
        }
        catch
        {
            listener?.Dispose();
            Interlocked.CompareExchange(ref _state, 0, 1); // A stop that came meanwhile stays: stopped is for good.
            throw;
        }

        if (_options.AuthToken is not null && _options.Tls is null && SocketEndPoints.CrossesNetwork(endPoint))
        {
            TransportLog.AuthTokenWithoutTls(_logger, nameof(MuxServerOptions), endPoint.ToString() ?? "?");
        }

        lock (_gate)
        {
            if (Volatile.Read(ref _state) != 1)
            {
                // A stop came while we bound and found no listener to close: nothing may listen once it has returned.
                CloseListener(listener);
                throw Stopped();
            }

            _listener = listener;
            LocalEndPoint = listener.LocalEndPoint;

            // Off this thread: the loop's first accept must not run under the lock.
            _acceptLoop = Task.Run(() => AcceptLoopAsync(listener));
        }

        ServerLog.ServerStarted(_logger, (LocalEndPoint ?? endPoint).ToString() ?? "?");
        return Task.CompletedTask;
    }

    public void StartWithoutListener() => Begin(requireEndPoint: false);

    private void Begin(bool requireEndPoint)
    {
        _options.Validate(requireEndPoint);
        Volatile.Write(ref _settings, ConnectionSettings.ForServer(_options, [.. _options.Interceptors]));
        if (_options.EnableCallContextPropagation)
        {
            MuxCallContext.EnablePropagation();
        }

        int state = Interlocked.CompareExchange(ref _state, 1, 0);
        if (state != 0)
        {
            throw state == 1 ? new InvalidOperationException("The Mux server has already been started.") : Stopped();
        }
    }

    private static ObjectDisposedException Stopped() =>
        new(
            nameof(MuxServer),
            "The Mux server is stopping or stopped (or disposed): it accepts no more connections and cannot start again. Create a new MuxServer.");

    public Task<MuxClient> ConnectInProcessAsync(MuxClientOptions? clientOptions, CancellationToken cancellationToken)
    {
        clientOptions ??= new MuxClientOptions();
        clientOptions.Validate(); // Before the server side exists: a refused option leaves nothing behind.
        string name = CountUserConnection("in-process");
        (DuplexPipeTransport clientSide, DuplexPipeTransport serverSide) =
            InProcessPipes.CreatePair(clientOptions.MaxFrameSize, _options.MaxFrameSize);
        Accept(serverSide, name);
        return MuxClient.ConnectAsync(clientSide, clientOptions, "in-process server", cancellationToken);
    }

    /// <summary>Completes once the connection has closed: the host's request lasts as long.</summary>
    /// <exception cref="ObjectDisposedException">The server is not running; nothing was done with the WebSocket.</exception>
    public Task ServeWebSocketAsync(WebSocket webSocket, EndPoint? remoteEndPoint, X509Certificate2? clientCertificate, ClaimsPrincipal? user)
    {
        long number = Interlocked.Increment(ref _connectionsAccepted);
        string name = remoteEndPoint?.ToString() is { Length: > 0 } remote ? $"websocket {remote}" : $"websocket #{number}";
        var transport = new WebSocketConnection(webSocket, remoteEndPoint, clientCertificate, _options.MaxFrameSize, _options.TimeProvider);
        return (TryServe(transport, name, user) ?? throw Stopped()).Completion;
    }

    public bool IsRunning => Volatile.Read(ref _state) == 1;

    public Task<MuxClient> ConnectInMemoryAsync(MuxClientOptions? clientOptions = null)
    {
        EnsureStarted();
        (DuplexPipeTransport clientSide, DuplexPipeTransport serverSide) = DuplexPipeTransport.CreatePair();
        Accept(serverSide, "in-memory");
        return MuxClient.ConnectAsync(clientSide, clientOptions);
    }

    private async Task AcceptLoopAsync(Socket listener)
    {
        TimeSpan retryDelay = TimeSpan.Zero;
        while (true)
        {
            Socket socket;
            try
            {
                socket = await AcceptSocket(listener).ConfigureAwait(false);
                retryDelay = TimeSpan.Zero;
            }
            catch (Exception ex) when (ex is SocketException or ObjectDisposedException)
            {
                if (Volatile.Read(ref _state) != 1)
                {
                    return; // Stopping: StopAsync closed the listener.
                }

                if (!IsTransient(ex))
                {
                    ServerLog.AcceptFailed(_logger, LocalEndPoint?.ToString() ?? "?", ex);

                    // Closed, it refuses a client's connect at once, where its backlog would leave the client waiting.
                    if (TakeListener() is { } broken)
                    {
                        CloseListener(broken);
                    }

                    return;
                }

                // From 5 ms, doubling up to 1 s: a process out of file descriptors stays so for a while; at once would spin.
                retryDelay = TimeSpan.FromMilliseconds(Math.Clamp(retryDelay.TotalMilliseconds * 2, 5, 1000));
                ServerLog.AcceptRetrying(_logger, LocalEndPoint?.ToString() ?? "?", retryDelay.TotalMilliseconds, ex);
                try
                {
                    await Task.Delay(retryDelay, _options.TimeProvider, _stopping.Token).ConfigureAwait(false);
                }
                catch (OperationCanceledException)
                {
                    return; // StopAsync ended the wait.
                }

                continue;
            }

            long acceptedAt = _options.TimeProvider.GetTimestamp(); // Before it is counted: the TLS handshake timeout runs from here.
            Interlocked.Increment(ref _connectionsAccepted);
            string name = socket.RemoteEndPoint?.ToString() is { Length: > 0 } remote ? remote : "unix socket peer";
            if (_options.Tls is null)
            {
                if (TryServe(new SocketConnection(socket, _options.MaxFrameSize, _options.TimeProvider), name) is null)
                {
                    socket.Dispose(); // Taken off the listener as the stop closed it.
                }
            }
            else
            {
                // The handshake runs off the accept loop: a slow or silent client must not hold up the next.
                _ = AcceptTlsAsync(new NetworkStream(socket, ownsSocket: true), name, acceptedAt, _stopping.Token);
            }
        }
    }

    // Out of file descriptors (EMFILE, ENFILE) or buffers, or a connection in the backlog aborted before it was taken: these
    // pass. Any other error means the listening socket itself is broken.
    private static bool IsTransient(Exception error) => error is SocketException
    {
        SocketErrorCode: SocketError.TooManyOpenSockets or SocketError.NoBufferSpaceAvailable or SocketError.ConnectionAborted
            or SocketError.ConnectionReset or SocketError.Interrupted,
    };

    // A client that fails its TLS handshake or times out, or a stop meanwhile, costs only this connection. Listed in
    // _handshakes until served, so that StopAsync waits for it.
    private async Task<bool> AcceptTlsAsync(Stream stream, string name, long acceptedAt, CancellationToken cancellationToken)
    {
        var handshake = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        _handshakes.TryAdd(handshake, 0);
        try
        {
            TimeProvider clock = _options.TimeProvider;
            using var timeout = new CancellationTokenSource(_options.HandshakeTimeLeft(acceptedAt, clock.GetTimestamp()), clock);
            using var linked = CancellationTokenSource.CreateLinkedTokenSource(cancellationToken, timeout.Token);
            SslStream ssl;
            try
            {
                // A stream handed to AcceptAsync may not heed the token in its reads: closing it ends them. On the thread
                // that cancels (a timer's), where nothing the stream throws may escape.
                using CancellationTokenRegistration close =
                    linked.Token.Register(static stream => StreamConnection.CloseQuietly((Stream)stream!), stream);
                ssl = await TlsHandshake.AuthenticateAsServerAsync(stream, _options.Tls!, linked.Token).ConfigureAwait(false);
            }
            catch (Exception ex)
            {
                // Whatever a client does wrong in its handshake costs only its own connection; the accept loop goes on.
                if (!cancellationToken.IsCancellationRequested)
                {
                    TransportLog.TlsHandshakeFailed(_logger, name, timeout.IsCancellationRequested
                        ? new TimeoutException(
                            $"The client did not complete the TLS handshake within {DurationText.Format(_options.HandshakeTimeout)} " +
                            "(MuxServerOptions.HandshakeTimeout).")
                        : ex);
                }

                await stream.DisposeAsync().ConfigureAwait(false);
                return false;
            }

            TransportLog.TlsEstablished(_logger, name, ssl.SslProtocol, ssl.NegotiatedCipherSuite);
            if (TryServe(new StreamConnection(ssl, (stream as NetworkStream)?.Socket, _options.MaxFrameSize, _options.TimeProvider), name) is null)
            {
                StreamConnection.CloseQuietly(ssl); // A stop came as the handshake finished.
                return false;
            }

            return true;
        }
        finally
        {
            _handshakes.TryRemove(handshake, out _);
            handshake.SetResult();
        }
    }

    public async Task AcceptAsync(Stream stream, CancellationToken cancellationToken = default)
    {
        StreamConnection.RequireDuplex(stream);

        string name = CountUserConnection("stream");
        long acceptedAt = _options.TimeProvider.GetTimestamp();
        if (_options.Tls is null)
        {
            Accept(new StreamConnection(stream, socket: null, _options.MaxFrameSize, _options.TimeProvider), name);
            return;
        }

        using var linked = CancellationTokenSource.CreateLinkedTokenSource(cancellationToken, _stopping.Token);
        if (!await AcceptTlsAsync(stream, name, acceptedAt, linked.Token).ConfigureAwait(false))
        {
            if (Volatile.Read(ref _state) == 2)
            {
                throw Stopped(); // The stop ended the handshake, or came as it finished.
            }

            throw new MuxConnectionException(
                $"The TLS handshake with {name} failed, timed out or was cancelled; the stream was closed (the server's log says why).",
                MuxCloseReason.ProtocolError,
                null);
        }
    }

    public void Accept(IDuplexPipe pipe)
    {
        ArgumentNullException.ThrowIfNull(pipe);
        if (_options.Tls is not null)
        {
            throw new InvalidOperationException(
                "MuxServerOptions.Tls is set, but a pipe is used as it is and cannot carry TLS. Accept a Stream with AcceptAsync instead " +
                "(for example PipeReader.AsStream and PipeWriter.AsStream over your transport).");
        }

        Accept(new DuplexPipeTransport(pipe), CountUserConnection("pipe"));
    }

    private string CountUserConnection(string kind)
    {
        EnsureStarted();
        return $"{kind} #{Interlocked.Increment(ref _connectionsAccepted)}";
    }

    private
 void EnsureStarted()
    {
        if (Volatile.Read(ref _state) == 0)
        {
            try
            {
                StartWithoutListener();
            }
            catch (InvalidOperationException) when (Volatile.Read(ref _state) == 1)
            {
                // Another thread started it first: serve.
            }
        }

        if (Volatile.Read(ref _state) != 1)
        {
            throw Stopped();
        }
    }

    /// <exception cref="ObjectDisposedException">The server is stopping or stopped; nothing was done with the transport.</exception>
    public void Accept(IMuxTransport transport, string name) => _ = TryServe(transport, name) ?? throw Stopped();

    // Null when the server is stopping or stopped: nothing was done with the transport. A connection served is listed
    // before StopAsync looks, so that its drain closes it.
    private ServerConnection? TryServe(IMuxTransport transport, string name, ClaimsPrincipal? hostUser = null)
    {
        Interlocked.Increment(ref _accepting);
        try
        {
            if (Volatile.Read(ref _state) != 1)
            {
                return null;
            }

            var connection = new ServerConnection(transport, Volatile.Read(ref _settings)!, _methods, _options, _logger, name, hostUser);
            _connections.TryAdd(connection, 0);
            ServerLog.ConnectionAccepted(_logger, name);
            _ = ForgetWhenClosedAsync(connection);
            connection.Start();
            return connection;
        }
        finally
        {
            if (Interlocked.Decrement(ref _accepting) == 0 && Volatile.Read(ref _state) == 2)
            {
                _acceptsEnded.TrySetResult(); // The stop may be waiting for this accept.
            }
        }
    }

    private async Task ForgetWhenClosedAsync(ServerConnection connection)
    {
        await connection.Completion.ConfigureAwait(false);
        _connections.TryRemove(connection, out _);
    }

    public async Task StopAsync(CancellationToken cancellationToken = default)
    {
        // Whichever stop's token fires first ends the wait for the calls in flight: a later stop (a DisposeAsync with its
        // ShutdownTimeout) keeps its promise while the first one drains.
        using CancellationTokenRegistration hurry =
            cancellationToken.Register(static patience => ((CancellationTokenSource)patience!).Cancel(), _outOfPatience);
        if (Interlocked.Exchange(ref _state, 2) == 2)
        {
            await _stopped.Task.ConfigureAwait(false);
            return;
        }

        try
        {
            await StopOnceAsync().ConfigureAwait(false);
        }
        finally
        {
            _stopped.SetResult();
        }
    }

    private async Task StopOnceAsync()
    {
        // _state is already 2: a start that has not published its listener yet closes it itself.
        Socket? listener = TakeListener();
        Task? acceptLoop;
        lock (_gate)
        {
            acceptLoop = _acceptLoop;
        }

        if (listener is not null)
        {
            CloseListener(listener);
        }

        // No connection may arrive after the drain starts: end an accept loop waiting to retry, and the TLS handshakes.
        await _stopping.CancelAsync().ConfigureAwait(false);
        if (acceptLoop is not null)
        {
            await acceptLoop.ConfigureAwait(false);
        }

        foreach (TaskCompletionSource handshake in _handshakes.Keys)
        {
            await handshake.Task.ConfigureAwait(false);
        }

        // _state is 2: a new accept refuses, and the last of those in flight completes _acceptsEnded unless this sees none.
        if (Volatile.Read(ref _accepting) == 0)
        {
            _acceptsEnded.TrySetResult();
        }

        await _acceptsEnded.Task.ConfigureAwait(false);

        int open = _connections.Count;
        var drains = new List<Task>(open);
        foreach (ServerConnection connection in _connections.Keys)
        {
            drains.Add(connection.DrainAndCloseAsync(_outOfPatience.Token));
        }

        await Task.WhenAll(drains).ConfigureAwait(false);
        foreach (ServerConnection connection in _connections.Keys)
        {
            await connection.Completion.ConfigureAwait(false);

            // ForgetWhenClosedAsync's continuation may run after ours: a stopped server must report no active connections.
            _connections.TryRemove(connection, out _);
        }

        ServerLog.ServerStopped(_logger, open);
    }

    // Whoever takes the listening socket closes it; null when another took it, or there is none.
    private Socket? TakeListener()
    {
        lock (_gate)
        {
            Socket? listener = _listener;
            _listener = null;
            return listener;
        }
    }

    // Removes the file of a Unix domain socket the bind created too, so the next start can bind the same path.
    private static void CloseListener(Socket listener)
    {
        string? path = SocketEndPoints.UnixSocketFile(listener.LocalEndPoint);
        listener.Dispose();
        if (path is not null)
        {
            try
            {
                File.Delete(path);
            }
            catch (Exception ex) when (ex is IOException or UnauthorizedAccessException)
            {
                // Left behind: the next bind reports the path as in use, which says what to do.
            }
        }
    }

    public async ValueTask DisposeAsync()
    {
        // An infinite ShutdownTimeout makes a source that never cancels. A server that never started makes none: its options
        // may be ones StartAsync refused, which must not fail the disposal too (an `await using` would hide the refusal).
        using CancellationTokenSource? deadline = Volatile.Read(ref _state) == 0 ? null : new(_options.ShutdownTimeout, _options.TimeProvider);
        await StopAsync(deadline?.Token ?? CancellationToken.None).ConfigureAwait(false);
    }
}
