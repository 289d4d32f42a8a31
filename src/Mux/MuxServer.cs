using System.Collections.Concurrent;
using System.IO.Pipelines;
using System.Net;
using System.Net.Sockets;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Logging.Abstractions;
using Mux.Connection;
using Mux.Server;
using Mux.Transport;

namespace Mux;

/// <summary>
/// Serves <see cref="MuxServiceAttribute"/> interfaces over TCP or a Unix domain socket (TLS
/// optional), or over connections you hand it (<see cref="AcceptAsync(Stream, CancellationToken)"/>,
/// <see cref="Accept(IDuplexPipe)"/>). Every accepted connection is
/// multiplexed: its requests run concurrently on the thread pool, each with its own call id.
/// Add services, then <see cref="StartAsync"/>; <see cref="StopAsync"/> (or disposal) drains the
/// calls in flight and closes.
/// </summary>
public sealed class MuxServer : IAsyncDisposable
{
    private readonly MuxServerOptions _options;
    private readonly ILogger _logger;

    // What the server serves, by method id. Filled by AddService before start.
    private readonly ServiceMethods _methods = new();

    // Open connections. Added by the accept loop, removed when each one closes.
    private readonly ConcurrentDictionary<ServerConnection, byte> _connections = new();

    private Socket? _listener;

    // Cancelled by StopAsync: ends the TLS handshakes still running (they have no connection yet).
    private readonly CancellationTokenSource _stopping = new();

    // TLS handshakes in flight, each completed when its handshake ends (added by the accept loop or
    // AcceptAsync, removed by the handshake itself); StopAsync waits for them.
    private readonly ConcurrentDictionary<TaskCompletionSource, byte> _handshakes = new();

    // Set once by StartAsync (after _state became 1); read by StopAsync and IsListening.
    private Task? _acceptLoop;
    private long _connectionsAccepted;

    // 0 = not started, 1 = running, 2 = stopping or stopped. Changed with Interlocked.
    private int _state;

    /// <summary>Creates a server; nothing is bound until <see cref="StartAsync"/>.</summary>
    /// <param name="options">The server's settings; validated by <see cref="StartAsync"/>.</param>
    public MuxServer(MuxServerOptions options)
    {
        ArgumentNullException.ThrowIfNull(options);
        _options = options;
        _logger = (options.LoggerFactory ?? NullLoggerFactory.Instance).CreateLogger("Mux.Server");
    }

    /// <summary>The bound address, with the actual port when port 0 was asked for; null before start.</summary>
    public EndPoint? LocalEndPoint { get; private set; }

    /// <summary>How many connections the server has accepted since it started.</summary>
    public long ConnectionsAccepted => Interlocked.Read(ref _connectionsAccepted);

    /// <summary>How many connections are open now.</summary>
    public int ActiveConnections => _connections.Count;

    /// <summary>The open connections (for tests and diagnostics).</summary>
    internal ICollection<ServerConnection> Connections => _connections.Keys;

    /// <summary>Whether the server is accepting connections: started with a listening socket, not
    /// stopping or stopped, and its accept loop still running (a failed accept ends it; that failure is
    /// logged).</summary>
    public bool IsListening => Volatile.Read(ref _state) == 1 && _acceptLoop is { IsCompleted: false };

    /// <summary>Serves <typeparamref name="TService"/> with one shared implementation (it must be
    /// thread-safe: calls run concurrently).</summary>
    /// <typeparam name="TService">A <see cref="MuxServiceAttribute"/> interface.</typeparam>
    /// <param name="implementation">The instance that serves every call.</param>
    /// <returns>This server, for chaining.</returns>
    /// <exception cref="InvalidOperationException">The server has started, no dispatcher is
    /// registered for the interface, or a method id collides with another service's.</exception>
    public MuxServer AddService<TService>(TService implementation)
        where TService : class
    {
        ArgumentNullException.ThrowIfNull(implementation);
        return AddMethods<TService>((service, method) => new SingletonServiceMethod<TService>(service, method, implementation));
    }

    /// <summary>Serves <typeparamref name="TService"/> with instances that
    /// <paramref name="activator"/> provides per call.</summary>
    /// <typeparam name="TService">A <see cref="MuxServiceAttribute"/> interface.</typeparam>
    /// <param name="activator">Provides (and releases) the instance that serves each call.</param>
    /// <returns>This server, for chaining.</returns>
    /// <exception cref="InvalidOperationException">The server has started, no dispatcher is
    /// registered for the interface, or a method id collides with another service's.</exception>
    public MuxServer AddService<TService>(MuxServiceActivator<TService> activator)
        where TService : class
    {
        ArgumentNullException.ThrowIfNull(activator);
        return AddMethods<TService>((service, method) => new ActivatedServiceMethod<TService>(service, method, activator));
    }

    private MuxServer AddMethods<TService>(Func<string, MuxMethodDefinition<TService>, ServiceMethod> bind)
        where TService : class
    {
        if (Volatile.Read(ref _state) != 0)
        {
            throw new InvalidOperationException("Services must be added before the Mux server starts.");
        }

        _methods.Add(bind, static (existing, added) => $"{existing.Name} and {added.Name} have the same method id 0x{added.Id:x8}; a server cannot serve both. Rename one of them.");
        return this;
    }

    /// <summary>Binds the endpoint (TCP for an <see cref="IPEndPoint"/>, a Unix domain socket for a
    /// <see cref="UnixDomainSocketEndPoint"/>, whose file is removed again when the server stops)
    /// and starts accepting connections.</summary>
    /// <param name="cancellationToken">Not used for binding, which does not wait; kept for the hosting pattern.</param>
    /// <returns>A task that completes once the server is listening.</returns>
    /// <exception cref="InvalidOperationException">The options are invalid or the server was already started.</exception>
    /// <exception cref="SocketException">The endpoint cannot be bound (for example, the port is in use).</exception>
    public Task StartAsync(CancellationToken cancellationToken = default)
    {
        _options.Validate();
        if (Interlocked.CompareExchange(ref _state, 1, 0) != 0)
        {
            throw new InvalidOperationException("The Mux server has already been started.");
        }

        EndPoint endPoint = _options.EndPoint!;
        Socket listener;
        try
        {
            listener = ServerTransport.Listen(endPoint, _options.ListenBacklog);
        }
        catch
        {
            Volatile.Write(ref _state, 0);
            throw;
        }

        ServerTransport.WarnIfTokenInPlaintext(_options, endPoint, _logger);

        _listener = listener;
        LocalEndPoint = listener.LocalEndPoint;
        ServerLog.ServerStarted(_logger, (LocalEndPoint ?? endPoint).ToString() ?? "?");
        _acceptLoop = AcceptLoopAsync(listener);
        return Task.CompletedTask;
    }

    /// <summary>Starts without a listening socket, to serve in-memory transports through
    /// <see cref="Accept(IMuxTransport, string)"/> (tests and benchmarks).</summary>
    internal void StartWithoutListener()
    {
        _options.Validate(requireEndPoint: false);
        if (Interlocked.CompareExchange(ref _state, 1, 0) != 0)
        {
            throw new InvalidOperationException("The Mux server has already been started.");
        }

    }

    /// <summary>Connects a client to this server over in-memory pipes (no socket), starting the
    /// server without a listener first if it has not started (tests and benchmarks).</summary>
    internal Task<MuxClient> ConnectInMemoryAsync(MuxClientOptions? clientOptions = null)
    {
        if (Volatile.Read(ref _state) == 0)
        {
            StartWithoutListener();
        }

        (DuplexPipeTransport clientSide, DuplexPipeTransport serverSide) = DuplexPipeTransport.CreatePair();
        Accept(serverSide, "in-memory");
        return MuxClient.ConnectAsync(clientSide, clientOptions);
    }

    private async Task AcceptLoopAsync(Socket listener)
    {
        while (true)
        {
            Socket socket;
            try
            {
                socket = await listener.AcceptAsync().ConfigureAwait(false);
            }
            catch (Exception ex) when (ex is SocketException or ObjectDisposedException)
            {
                if (Volatile.Read(ref _state) == 1)
                {
                    ServerLog.AcceptFailed(_logger, LocalEndPoint?.ToString() ?? "?", ex);
                }

                return;
            }

            long acceptedAt = _options.TimeProvider.GetTimestamp(); // Before it is counted: the TLS handshake timeout runs from here.
            Interlocked.Increment(ref _connectionsAccepted);
            string name = socket.RemoteEndPoint?.ToString() is { Length: > 0 } remote ? remote : "unix socket peer";
            if (_options.Tls is null)
            {
                Accept(new SocketConnection(socket, _options.MaxFrameSize), name);
            }
            else
            {
                // The handshake runs off the accept loop: a slow or silent client must not hold up the next.
                _ = AcceptTlsAsync(socket, name, acceptedAt);
            }
        }
    }

    /// <summary>Authenticates TLS over <paramref name="socket"/> (bounded by the handshake timeout),
    /// then serves it; a failed handshake is logged and costs only this connection.</summary>
    /// <returns>Whether the connection is being served.</returns>
    private async Task<bool> AcceptTlsAsync(Socket socket, string name, long acceptedAt)
    {
        var handshake = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        _handshakes.TryAdd(handshake, 0);
        try
        {
            StreamConnection? transport = await ServerTransport.AuthenticateAsync(new NetworkStream(socket, ownsSocket: true), socket, _options, _logger, name, acceptedAt, _stopping.Token).ConfigureAwait(false);
            if (transport is null)
            {
                return false;
            }

            Accept(transport, name);
            return true;
        }
        finally
        {
            _handshakes.TryRemove(handshake, out _);
            handshake.SetResult();
        }
    }

    /// <summary>
    /// Serves one connection over a stream you have accepted yourself (a named pipe, a tunnel, any
    /// bidirectional <see cref="Stream"/>). With <see cref="MuxServerOptions.Tls"/> set, TLS is
    /// authenticated over the stream first. A server that has not been started starts without a
    /// listener (so <see cref="MuxServerOptions.EndPoint"/> may be null); add services before. The
    /// server owns the stream from now on and disposes it when the connection closes.
    /// </summary>
    /// <param name="stream">A connected, readable and writable stream whose other end is a Mux client.</param>
    /// <param name="cancellationToken">Abandons the TLS handshake (not used without TLS).</param>
    /// <returns>A task that completes when the connection is being served (after the TLS handshake).</returns>
    /// <exception cref="MuxConnectionException">The TLS handshake failed, timed out
    /// (<see cref="MuxServerOptions.HandshakeTimeout"/>) or was cancelled; the stream is closed.</exception>
    /// <exception cref="InvalidOperationException">The options are invalid, or the server is stopping or stopped.</exception>
    /// <exception cref="ArgumentException">The stream cannot both read and write.</exception>
    public async Task AcceptAsync(Stream stream, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(stream);
        if (!stream.CanRead || !stream.CanWrite)
        {
            throw new ArgumentException("A Mux connection needs a stream that can both read and write.", nameof(stream));
        }

        EnsureServingUserConnections();
        long acceptedAt = _options.TimeProvider.GetTimestamp();
        long number = Interlocked.Increment(ref _connectionsAccepted);
        string name = $"stream #{number}";
        if (_options.Tls is null)
        {
            Accept(new StreamConnection(stream, socket: null, _options.MaxFrameSize), name);
            return;
        }

        using var linked = CancellationTokenSource.CreateLinkedTokenSource(cancellationToken, _stopping.Token);
        var handshake = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        _handshakes.TryAdd(handshake, 0);
        try
        {
            StreamConnection? transport = await ServerTransport.AuthenticateAsync(stream, socket: null, _options, _logger, name, acceptedAt, linked.Token).ConfigureAwait(false)
                ?? throw new MuxConnectionException($"The TLS handshake with {name} failed, timed out or was cancelled; the stream was closed (the server's log says why).", MuxCloseReason.ProtocolError, null);
            Accept(transport, name);
        }
        finally
        {
            _handshakes.TryRemove(handshake, out _);
            handshake.SetResult();
        }
    }

    /// <summary>
    /// Serves one connection over a duplex pipe you provide (any transport that offers
    /// System.IO.Pipelines). The pipe is used as it is, so <see cref="MuxServerOptions.Tls"/> does not
    /// apply (use <see cref="AcceptAsync(Stream, CancellationToken)"/> for TLS). A server that has not
    /// been started starts without a listener; add services before. The server completes both ends of
    /// the pipe when the connection closes.
    /// </summary>
    /// <param name="pipe">The pipe: <see cref="IDuplexPipe.Input"/> carries the client's bytes,
    /// <see cref="IDuplexPipe.Output"/> carries ours.</param>
    /// <exception cref="InvalidOperationException">The options are invalid, set
    /// <see cref="MuxServerOptions.Tls"/>, or the server is stopping or stopped.</exception>
    public void Accept(IDuplexPipe pipe)
    {
        ArgumentNullException.ThrowIfNull(pipe);
        if (_options.Tls is not null)
        {
            throw new InvalidOperationException("MuxServerOptions.Tls is set, but a pipe is used as it is and cannot carry TLS. Accept a Stream with AcceptAsync instead (for example PipeReader.AsStream and PipeWriter.AsStream over your transport).");
        }

        EnsureServingUserConnections();
        long number = Interlocked.Increment(ref _connectionsAccepted);
        Accept(new DuplexPipeTransport(pipe), $"pipe #{number}");
    }

    private void EnsureServingUserConnections()
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
            throw new InvalidOperationException("The Mux server is stopping or stopped; it accepts no more connections.");
        }
    }

    /// <summary>Serves one connection over an already-connected transport.</summary>
    internal void Accept(IMuxTransport transport, string name)
    {
        var connection = new ServerConnection(transport, _methods, _options, _logger, name);
        _connections.TryAdd(connection, 0);
        ServerLog.ConnectionAccepted(_logger, name);
        _ = ForgetWhenClosedAsync(connection);
        connection.Start();
        if (Volatile.Read(ref _state) != 1)
        {
            // Raced with StopAsync: it may have missed this connection.
            _ = connection.DrainAndCloseAsync(CancellationToken.None);
        }
    }

    private async Task ForgetWhenClosedAsync(ServerConnection connection)
    {
        await connection.Completion.ConfigureAwait(false);
        _connections.TryRemove(connection, out _);
    }

    /// <summary>
    /// Stops accepting, tells every client GoAway, waits for the calls in flight to finish, and
    /// closes every connection. Calls still running when <paramref name="cancellationToken"/> fires
    /// are cancelled and their connections closed. Safe to call more than once.
    /// </summary>
    /// <param name="cancellationToken">Ends the wait for calls in flight.</param>
    /// <returns>A task that completes when every connection is closed.</returns>
    public async Task StopAsync(CancellationToken cancellationToken = default)
    {
        if (Interlocked.Exchange(ref _state, 2) == 2)
        {
            await WaitForConnectionsAsync().ConfigureAwait(false);
            return;
        }

        if (_listener is not null)
        {
            ServerTransport.StopListening(_listener, LocalEndPoint);
        }

        if (_acceptLoop is not null)
        {
            await _acceptLoop.ConfigureAwait(false);
        }

        // No connection may arrive after the drain below starts: end the TLS handshakes in flight.
        await _stopping.CancelAsync().ConfigureAwait(false);
        foreach (TaskCompletionSource handshake in _handshakes.Keys)
        {
            await handshake.Task.ConfigureAwait(false);
        }

        int open = _connections.Count;
        var drains = new List<Task>(open);
        foreach (ServerConnection connection in _connections.Keys)
        {
            drains.Add(connection.DrainAndCloseAsync(cancellationToken));
        }

        await Task.WhenAll(drains).ConfigureAwait(false);
        await WaitForConnectionsAsync().ConfigureAwait(false);
        ServerLog.ServerStopped(_logger, open);
    }

    private async Task WaitForConnectionsAsync()
    {
        foreach (ServerConnection connection in _connections.Keys)
        {
            await connection.Completion.ConfigureAwait(false);

            // ForgetWhenClosedAsync does the same, but its continuation may run after ours: a
            // stopped server must report no active connections.
            _connections.TryRemove(connection, out _);
        }
    }

    /// <summary>Stops the server (see <see cref="StopAsync"/>), giving calls in flight
    /// <see cref="MuxServerOptions.ShutdownTimeout"/> to finish.</summary>
    /// <returns>A task that completes when the server has stopped.</returns>
    public async ValueTask DisposeAsync()
    {
        using var deadline = _options.ShutdownTimeout == Timeout.InfiniteTimeSpan
            ? new CancellationTokenSource()
            : new CancellationTokenSource(_options.ShutdownTimeout);
        await StopAsync(deadline.Token).ConfigureAwait(false);
    }
}
