using System.IO.Pipelines;
using System.Net;
using System.Net.Sockets;
using System.Net.WebSockets;
using System.Security.Claims;
using System.Security.Cryptography.X509Certificates;
using Mux.Connection;
using Mux.Server;

namespace Mux;

/// <summary>
/// Serves <see cref="MuxServiceAttribute"/> interfaces over TCP or a Unix domain socket (TLS optional), or over connections
/// you hand it (<see cref="AcceptAsync(Stream, CancellationToken)"/>, <see cref="Accept(IDuplexPipe)"/>). Every accepted
/// connection is multiplexed: its requests run concurrently on the thread pool, each with its own call id.
/// Add services, then <see cref="StartAsync"/>; <see cref="StopAsync"/> (or disposal) drains the calls in flight and closes.
/// </summary>
public sealed class MuxServer : IAsyncDisposable
{
    // The services, the accept loop and the open connections behind this public face (Server/ServerRuntime).
    private readonly ServerRuntime _runtime;

    /// <summary>Creates a server; nothing is bound until <see cref="StartAsync"/>.</summary>
    /// <param name="options">The server's settings; validated by <see cref="StartAsync"/>.</param>
    public MuxServer(MuxServerOptions options)
    {
        ArgumentNullException.ThrowIfNull(options);
        _runtime = new ServerRuntime(options);
    }

    /// <summary>The bound address, with the actual port when port 0 was asked for; null before start.</summary>
    public EndPoint? LocalEndPoint => _runtime.LocalEndPoint;

    /// <summary>How many connections the server has accepted since it started.</summary>
    public long ConnectionsAccepted => _runtime.ConnectionsAccepted;

    /// <summary>How many connections are open now.</summary>
    public int ActiveConnections => _runtime.ActiveConnections;

    /// <summary>The open connections, for tests that drive their edges directly.</summary>
    internal ICollection<ServerConnection> Connections => _runtime.Connections;

    /// <summary>Whether the server is accepting connections: started with a listening socket (or serving its ASP.NET Core
    /// host's MapMux endpoints), not stopping, and its accept loop running. An accept that fails for a passing reason
    /// (out of file descriptors, a connection aborted in the backlog) is retried; any other failure ends the loop.</summary>
    public bool IsListening => _runtime.IsListening;

    /// <summary>Tests make it fail.</summary>
    internal Func<Socket, ValueTask<Socket>> AcceptSocket { set => _runtime.AcceptSocket = value; }

    /// <summary>Serves <typeparamref name="TService"/> with one shared implementation (it must be
    /// thread-safe: calls run concurrently). For a <see cref="MuxServiceActivator{TService}"/>, name
    /// the service: <c>AddService&lt;IMyService&gt;(activator)</c> (without the type argument, C#
    /// binds an activator to this overload, which refuses it).</summary>
    /// <typeparam name="TService">A <see cref="MuxServiceAttribute"/> interface.</typeparam>
    /// <param name="implementation">The instance that serves every call.</param>
    /// <returns>This server, for chaining.</returns>
    /// <exception cref="ArgumentException"><paramref name="implementation"/> is a
    /// <see cref="MuxServiceActivator{TService}"/> and <typeparamref name="TService"/> is not an
    /// interface (C# inferred the activator's class); the message names the call to make.</exception>
    /// <exception cref="InvalidOperationException">The server has started, no dispatcher is
    /// registered for the interface, or a method id collides with another service's.</exception>
    public MuxServer AddService<TService>(TService implementation)
        where TService : class
    {
        ArgumentNullException.ThrowIfNull(implementation);
        if (implementation is IServiceActivator activator && !typeof(TService).IsInterface)
        {
            throw new ArgumentException(
                $"{typeof(TService).FullName} is a MuxServiceActivator<{activator.ServiceType.FullName}>, passed as if it were the " +
                "service's implementation (C# inferred the activator's class as the service type). " +
                $"Name the service: AddService<{activator.ServiceType.FullName}>(activator).",
                nameof(implementation));
        }

        _runtime.AddMethods<TService>((service, method) => new SingletonServiceMethod<TService>(service, method, implementation));
        return this;
    }

    /// <summary>Serves <typeparamref name="TService"/> with instances that <paramref name="activator"/> provides per call.
    /// Name the service, <c>AddService&lt;IMyService&gt;(activator)</c>: C# does not infer it from the activator's base
    /// class.</summary>
    /// <typeparam name="TService">A <see cref="MuxServiceAttribute"/> interface.</typeparam>
    /// <param name="activator">Provides (and releases) the instance that serves each call.</param>
    /// <returns>This server, for chaining.</returns>
    /// <exception cref="InvalidOperationException">The server has started, no dispatcher is
    /// registered for the interface, or a method id collides with another service's.</exception>
    public MuxServer AddService<TService>(MuxServiceActivator<TService> activator)
        where TService : class
    {
        ArgumentNullException.ThrowIfNull(activator);
        _runtime.AddMethods<TService>((service, method) => new ActivatedServiceMethod<TService>(service, method, activator));
        return this;
    }

    /// <summary>Binds the endpoint (TCP for an <see cref="IPEndPoint"/>, a Unix domain socket for a
    /// <see cref="UnixDomainSocketEndPoint"/>, whose file is removed again when the server stops)
    /// and starts accepting connections.</summary>
    /// <param name="cancellationToken">Not used for binding, which does not wait; kept for the hosting pattern.</param>
    /// <returns>A task that completes once the server is listening.</returns>
    /// <exception cref="InvalidOperationException">The options are invalid or the server was already started.</exception>
    /// <exception cref="ObjectDisposedException">The server has been stopped or disposed (a stopped server does not start
    /// again), also by a stop that came while this start was binding.</exception>
    /// <exception cref="SocketException">The endpoint cannot be bound (for example, the port is in use).</exception>
    public Task StartAsync(CancellationToken cancellationToken = default) => _runtime.StartAsync();

    /// <summary>
    /// Connects a client to this server over a pair of pipes, with no listener and no port, so an application's tests can
    /// call the real server. The connection behaves as a TCP one does (handshake and authentication, limits,
    /// interceptors, keepalive, GoAway and drain), but its <see cref="MuxConnectionInfo"/> has no address or certificate
    /// and neither side's <c>Tls</c> applies. A server not yet started starts without a listener (so
    /// <see cref="MuxServerOptions.EndPoint"/> may be null); add services before. The client cannot reconnect.
    /// </summary>
    /// <example><code>
    /// await using var server = new MuxServer(new MuxServerOptions());
    /// server.AddService&lt;IUserService&gt;(new UserService());
    /// await using MuxClient client = await server.ConnectInProcessAsync();
    /// int sum = await client.CreateProxy&lt;IUserService&gt;().Add(2, 3);
    /// </code></example>
    /// <param name="options">The client's settings (<see cref="MuxClientOptions.EndPoint"/> and
    /// <see cref="MuxClientOptions.Tls"/> are not used); defaults apply when null.</param>
    /// <param name="cancellationToken">Abandons the handshake.</param>
    /// <returns>A connected client.</returns>
    /// <exception cref="MuxConnectionException">The server refused the handshake (a wrong
    /// <see cref="MuxClientOptions.AuthToken"/>, <see cref="MuxServerOptions.Authenticate"/> returned
    /// no user), or it did not complete within <see cref="MuxClientOptions.ConnectTimeout"/>.</exception>
    /// <exception cref="InvalidOperationException">The client's or the server's options are invalid.</exception>
    /// <exception cref="ObjectDisposedException">The server is stopping or stopped (or disposed).</exception>
    public Task<MuxClient> ConnectInProcessAsync(MuxClientOptions? options = null, CancellationToken cancellationToken = default) =>
        _runtime.ConnectInProcessAsync(options, cancellationToken);

    /// <summary>For Mux.AspNetCore's MapMux; completes when the connection has closed.</summary>
    /// <exception cref="ObjectDisposedException">The server is not running; nothing was done with the WebSocket.</exception>
    internal Task ServeWebSocketAsync(WebSocket webSocket, EndPoint? remoteEndPoint, X509Certificate2? clientCertificate, ClaimsPrincipal? user) =>
        _runtime.ServeWebSocketAsync(webSocket, remoteEndPoint, clientCertificate, user);

    /// <summary>Whether the server serves new connections: started, and not stopping.</summary>
    internal bool IsRunning => _runtime.IsRunning;

    /// <summary>Calls holding a permit of <see cref="MuxServerOptions.MaxConcurrentCalls"/> now; 0 without the cap.</summary>
    internal int CallsRunningUnderCap => _runtime.CallsRunningUnderCap;

    internal long CallsRefusedOverloaded => _runtime.CallsRefusedOverloaded;

    /// <summary>For tests and benchmarks; starts the server without a listener if it has not started.</summary>
    internal Task<MuxClient> ConnectInMemoryAsync(MuxClientOptions? clientOptions = null) => _runtime.ConnectInMemoryAsync(clientOptions);

    internal void StartWithoutListener() => _runtime.StartWithoutListener();

    /// <summary>For tests, benchmarks and fuzzing.</summary>
    internal void Accept(Transport.IMuxTransport transport, string name) => _runtime.Accept(transport, name);

    /// <summary>
    /// Serves one connection over a stream you accepted yourself (a named pipe, a tunnel), with TLS over it when
    /// <see cref="MuxServerOptions.Tls"/> is set. A server not yet started starts without a listener; add services
    /// before. The server owns the stream and disposes it when the connection closes.
    /// </summary>
    /// <param name="stream">A connected, readable and writable stream whose other end is a Mux client.</param>
    /// <param name="cancellationToken">Abandons the TLS handshake (not used without TLS).</param>
    /// <returns>A task that completes when the connection is being served (after the TLS handshake).</returns>
    /// <exception cref="MuxConnectionException">The TLS handshake failed, timed out
    /// (<see cref="MuxServerOptions.HandshakeTimeout"/>) or was cancelled; the stream is closed.</exception>
    /// <exception cref="InvalidOperationException">The options are invalid.</exception>
    /// <exception cref="ObjectDisposedException">The server is stopping or stopped: nothing was done with the stream,
    /// unless the stop came during the TLS handshake, which closes it.</exception>
    /// <exception cref="ArgumentException">The stream cannot both read and write.</exception>
    public Task AcceptAsync(Stream stream, CancellationToken cancellationToken = default) => _runtime.AcceptAsync(stream, cancellationToken);

    /// <summary>
    /// Serves one connection over a duplex pipe you provide, used as it is, so <see cref="MuxServerOptions.Tls"/> must
    /// not be set. A server not yet started starts without a listener; add services before. The server completes both
    /// ends of the pipe when the connection closes.
    /// </summary>
    /// <param name="pipe">The pipe: <see cref="IDuplexPipe.Input"/> carries the client's bytes,
    /// <see cref="IDuplexPipe.Output"/> carries ours.</param>
    /// <exception cref="InvalidOperationException">The options are invalid, or set
    /// <see cref="MuxServerOptions.Tls"/>.</exception>
    /// <exception cref="ObjectDisposedException">The server is stopping or stopped; nothing was done with the pipe.</exception>
    public void Accept(IDuplexPipe pipe) => _runtime.Accept(pipe);

    /// <summary>
    /// Stops accepting, tells every client GoAway, waits for the calls in flight, and closes every connection. Calls still
    /// running when <paramref name="cancellationToken"/> fires are cancelled. Safe to call more than once, and at once.
    /// From its start on, <see cref="StartAsync"/> and the Accept methods throw <see cref="ObjectDisposedException"/>.
    /// </summary>

    /// <param name="cancellationToken">Ends the wait for calls in flight.</param>
    /// <returns>A task that completes when every connection is closed.</returns>
    public Task StopAsync(CancellationToken cancellationToken = default) => _runtime.StopAsync(cancellationToken);

    /// <summary>Stops the server (see <see cref="StopAsync"/>), giving calls in flight
    /// <see cref="MuxServerOptions.ShutdownTimeout"/> to finish.</summary>
    /// <returns>A task that completes when the server has stopped.</returns>
    public ValueTask DisposeAsync() => _runtime.DisposeAsync();
}
