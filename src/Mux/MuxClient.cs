using System.ComponentModel;
using System.Diagnostics.CodeAnalysis;
using System.IO.Pipelines;
using System.Net;
using System.Net.Security;
using System.Net.Sockets;
using Microsoft.Extensions.Logging;
using Mux.Client;
using Mux.Connection;
using Mux.Transport;

namespace Mux;

/// <summary>
/// One multiplexed connection to a Mux server. Thread-safe: share one client between all callers; hundreds of concurrent calls travel over
/// its single TCP connection, each tagged with its own call id, and their frames are merged into few socket reads and writes.
/// </summary>
[SuppressMessage(
    "ApiDesign",
    "RS0026:Do not add multiple public overloads with optional parameters",
    Justification = "The ConnectAsync overloads differ in the type of their first, required parameter (endpoint, URI, stream, pipe).")]
public sealed class MuxClient : IMuxCallInvoker, IAsyncDisposable
{
    // The connections, services and call path behind this public face (Client/ClientRuntime).
    private readonly ClientRuntime _runtime;

    // Every call of a plain proxy goes through it; a bound proxy's go through one with the bound settings.
    private readonly CallInvoker _invoker;

    private MuxClient(ClientRuntime runtime)
    {
        _runtime = runtime;
        _invoker = new CallInvoker(runtime, runtime.CallSettings);
        runtime.StateChanged = OnStateChanged;
    }

    // One endpoint's ConnectionKeeper, or an EndPointBalancer over several instances.
    private ConnectionSource Keeper => _runtime.Keeper;

    /// <summary>The newest connection under this client, for tests that drive its edges directly.</summary>
    internal ClientConnection Connection => Keeper.Latest ?? throw new InvalidOperationException("The client has not connected yet.");

    /// <summary>Calls sent again within <see cref="MuxClientOptions.RetryBudget"/> so far (load runner and tests).</summary>
    internal long RetriesMade => _runtime.RetriesMade;

    /// <summary>The server's address: the socket address of the connection, or the configured endpoint while connecting; null for in-memory
    /// connections and for a client over several instances (see <see cref="GetEndPointStatistics"/>).</summary>
    public EndPoint? RemoteEndPoint => _runtime.RemoteEndPoint;

    /// <summary>Whether the newest connection is open. It may be finishing its calls after the server's GoAway while new calls wait for the
    /// next one: <see cref="State"/> says which.</summary>
    public bool IsConnected => Keeper.Latest is { IsClosed: false };

    /// <summary>Why the newest connection closed; <see cref="MuxCloseReason.None"/> while it is open or before the first one.</summary>
    public MuxCloseReason CloseReason => Keeper.Latest?.CloseReason ?? MuxCloseReason.None;

    /// <summary>Where the client is in its connection's life. Changes are reported by <see cref="StateChanged"/>. It is Connected before
    /// any call can use a new connection, so a caller whose call succeeded never finds it still connecting (the event may come just
    /// after).</summary>
    public MuxClientState State => Keeper.State;

    /// <summary>
    /// Raised on each change of <see cref="State"/>: connected, connection lost (with the reason in
    /// <see cref="MuxClientStateChangedEventArgs.Error"/>), reconnecting, closed. Raised on a background thread, one change at a time and
    /// in order; a handler that throws is logged and ignored.
    /// </summary>
    public event EventHandler<MuxClientStateChangedEventArgs>? StateChanged;

    /// <summary>Completes when the client has closed: disposed, or its connection lost (or never made, or done with the calls it still
    /// served after the server's GoAway) with <see cref="MuxClientOptions.AutoReconnect"/> off. While the client reconnects it does not
    /// complete.</summary>
    public Task Completion => Keeper.Completion;

    /// <summary>Calls waiting for their response on the current connection right now (on all instances' connections for a client over
    /// several).</summary>
    public int PendingCalls => Keeper.PendingCalls;

    /// <summary>Connects to a Mux server and completes the protocol handshake: over TCP for an <see cref="IPEndPoint"/> or
    /// <see cref="DnsEndPoint"/>, over a Unix domain socket for a <see cref="UnixDomainSocketEndPoint"/>; with TLS first when
    /// <see cref="MuxClientOptions.Tls"/> is set. If the connection is later lost, the client reconnects by itself (see
    /// <see cref="MuxClientOptions.AutoReconnect"/>).</summary>
    /// <param name="endPoint">The server's address.</param>
    /// <param name="options">Settings; defaults apply when null.</param>
    /// <param name="cancellationToken">Abandons the attempt.</param>
    /// <returns>A connected client.</returns>
    /// <exception cref="MuxConnectionException">The server refused or did not answer in time
    /// (<see cref="MuxClientOptions.ConnectTimeout"/>), failed the TLS handshake (its message says why: an untrusted certificate, a name
    /// mismatch, no <c>mux/1</c> ALPN), or is not a Mux server.</exception>
    /// <exception cref="InvalidOperationException">The options are invalid.</exception>
    public static async Task<MuxClient> ConnectAsync(
        EndPoint endPoint, MuxClientOptions? options = null, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(endPoint);
        return new MuxClient(await ClientRuntime.ConnectAsync(endPoint, options ?? new MuxClientOptions(), cancellationToken).ConfigureAwait(false));
    }

    /// <summary>
    /// Connects to a Mux server over WebSocket (an ASP.NET Core endpoint mapped with
    /// <c>MapMux</c>, from the Mux.AspNetCore package) and completes the protocol handshake: the
    /// same frames as over TCP, in binary WebSocket messages, with the subprotocol <c>mux</c>.
    /// <c>wss://</c> runs over TLS: <see cref="MuxClientOptions.Tls"/>, when set, gives the client
    /// certificates, the server's validation callback, the protocols and the revocation check (not
    /// its ALPN list, which HTTP negotiates, nor <see cref="SslClientAuthenticationOptions.TargetHost"/>:
    /// the URI's host is the name the certificate is checked against); without it the machine's
    /// trust decides. Everything else behaves as over TCP: if the connection is later lost, or the
    /// server sends GoAway, the client reconnects to the same URI by itself (see
    /// <see cref="MuxClientOptions.AutoReconnect"/>), and <see cref="MuxClientOptions.ConnectTimeout"/>
    /// bounds the HTTP upgrade and the handshake together.
    /// </summary>
    /// <example><code>
    /// await using MuxClient client = await MuxClient.ConnectAsync(new Uri("ws://127.0.0.1:5000/mux"));
    /// </code></example>
    /// <param name="uri">The endpoint's address: <c>ws://host:port/path</c>, or <c>wss://</c> for TLS.</param>
    /// <param name="options">Settings (<see cref="MuxClientOptions.EndPoint"/> is not used); defaults apply when null.</param>
    /// <param name="cancellationToken">Abandons the attempt.</param>
    /// <returns>A connected client.</returns>
    /// <exception cref="MuxConnectionException">The server could not be reached or did not answer in
    /// time, failed the TLS handshake, answered the upgrade with an HTTP error (its status is in the
    /// message: 401 when the endpoint requires an authenticated user, 404 when nothing is mapped at
    /// the path), is not a Mux endpoint, or refused the Mux handshake.</exception>
    /// <exception cref="ArgumentException"><paramref name="uri"/> is not an absolute ws:// or wss:// URI.</exception>
    /// <exception cref="InvalidOperationException">The options are invalid, or set
    /// <see cref="MuxClientOptions.Tls"/> for a ws:// URI (plaintext: use wss://).</exception>
    public static async Task<MuxClient> ConnectAsync(Uri uri, MuxClientOptions? options = null, CancellationToken cancellationToken = default)
    {
        var endPoint = new MuxWebSocketEndPoint(uri);
        options ??= new MuxClientOptions();
        if (options.Tls is not null && !endPoint.IsSecure)
        {
            throw new InvalidOperationException(
                $"MuxClientOptions.Tls is set, but '{uri}' is a plaintext ws:// URI. Use wss:// to connect over TLS, or leave Tls null.");
        }

        return new MuxClient(await ClientRuntime.ConnectAsync(endPoint, options, cancellationToken).ConfigureAwait(false));
    }

    /// <summary>Connects to <see cref="MuxClientOptions.EndPoint"/> and completes the handshake; with
    /// <see cref="MuxClientOptions.EndPoints"/> or <see cref="MuxClientOptions.EndPointResolver"/> set, connects to every instance and
    /// returns once one is connected (the others keep connecting in the background).</summary>
    /// <param name="options">Settings, including the endpoint.</param>
    /// <param name="cancellationToken">Abandons the attempt.</param>
    /// <returns>A connected client.</returns>
    /// <exception cref="MuxConnectionException">The server refused or did not answer in time.</exception>
    /// <exception cref="InvalidOperationException">The options are invalid or name no endpoint.</exception>
    public static Task<MuxClient> ConnectAsync(MuxClientOptions options, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(options);
        return options.IsBalanced
            ? ConnectBalancedAsync(options, cancellationToken)
            : ConnectAsync(RequireEndPoint(options), options, cancellationToken);
    }

    private static async Task<MuxClient> ConnectBalancedAsync(MuxClientOptions options, CancellationToken cancellationToken) =>
        new(await ClientRuntime.ConnectBalancedAsync(options, cancellationToken).ConfigureAwait(false));

    /// <summary>
    /// Creates a client that connects to <see cref="MuxClientOptions.EndPoint"/> (or to every instance of
    /// <see cref="MuxClientOptions.EndPoints"/> or <see cref="MuxClientOptions.EndPointResolver"/>) in the background, and returns at once:
    /// it does not fail when the server is not up yet. Calls made before the connection is up wait for it, within
    /// <see cref="MuxClientOptions.CallTimeout"/> and their cancellation token; failed attempts are retried with backoff (unless
    /// <see cref="MuxClientOptions.AutoReconnect"/> is off, in which case one failed attempt closes the client). Watch <see cref="State"/>
    /// or <see cref="StateChanged"/> to see it connect.
    /// </summary>
    /// <param name="options">Settings, including the endpoint.</param>
    /// <returns>A client in the <see cref="MuxClientState.Connecting"/> state.</returns>
    /// <exception cref="InvalidOperationException">The options are invalid or name no endpoint.</exception>
    public static MuxClient Create(MuxClientOptions options)
    {
        ArgumentNullException.ThrowIfNull(options);
        return new MuxClient(options.IsBalanced ? ClientRuntime.CreateBalanced(options) : ClientRuntime.Create(RequireEndPoint(options), options));
    }

    /// <summary>
    /// Runs a Mux connection over a stream you have opened yourself (a named pipe, a serial port, a tunnel, any bidirectional
    /// <see cref="Stream"/>) and completes the handshake. With <see cref="MuxClientOptions.Tls"/> set, TLS is authenticated over the stream
    /// first (set <see cref="SslClientAuthenticationOptions.TargetHost"/>: a stream has no host name). The client owns the stream from now
    /// on and disposes it when the connection closes. Such a client cannot reconnect: when the connection is lost, it closes.
    /// </summary>
    /// <param name="stream">A connected, readable and writable stream; the server end serves Mux (for example through
    /// <see cref="MuxServer.AcceptAsync(Stream, CancellationToken)"/>).</param>
    /// <param name="options">Settings (<see cref="MuxClientOptions.EndPoint"/> is not used); defaults apply when null.</param>
    /// <param name="cancellationToken">Abandons the attempt.</param>
    /// <returns>A connected client.</returns>
    /// <exception cref="MuxConnectionException">The TLS handshake (when <see cref="MuxClientOptions.Tls"/> is set) or Mux's own failed, or
    /// the two together took longer than <see cref="MuxClientOptions.ConnectTimeout"/>.</exception>
    /// <exception cref="InvalidOperationException">The options are invalid.</exception>
    /// <exception cref="ArgumentException">The stream cannot both read and write.</exception>
    public static async Task<MuxClient> ConnectAsync(Stream stream, MuxClientOptions? options = null, CancellationToken cancellationToken = default)
    {
        StreamConnection.RequireDuplex(stream);

        options ??= new MuxClientOptions();
        options.Validate();

        // One ConnectTimeout for TLS and the handshake together, as over an endpoint.
        long deadline = ClockDeadline.After(options.TimeProvider, options.ConnectTimeout);
        IMuxTransport transport;
        try
        {
            ILogger logger = ClientRuntime.CreateLogger(options);
            transport = await ClientTransport.OverStreamAsync(stream, options, logger, cancellationToken).ConfigureAwait(false);
        }
        catch
        {
            await stream.DisposeAsync().ConfigureAwait(false);
            throw;
        }

        return new(await ClientRuntime.ConnectAsync(transport, options, "stream", cancellationToken, deadline).ConfigureAwait(false));
    }

    /// <summary>
    /// Runs a Mux connection over a duplex pipe you provide (any transport that offers System.IO.Pipelines, such as a Kestrel connection or
    /// an in-memory pipe pair) and completes the handshake. The pipe is used as it is, so <see cref="MuxClientOptions.Tls"/> must not be
    /// set (connect with a <see cref="Stream"/> for TLS). The client completes both ends of the pipe when the connection closes; it cannot
    /// reconnect.
    /// </summary>
    /// <param name="pipe">The pipe: <see cref="IDuplexPipe.Input"/> carries the server's bytes, <see cref="IDuplexPipe.Output"/> carries
    /// ours.</param>
    /// <param name="options">Settings (<see cref="MuxClientOptions.EndPoint"/> is not used); defaults apply when null.</param>
    /// <param name="cancellationToken">Abandons the attempt.</param>
    /// <returns>A connected client.</returns>
    /// <exception cref="MuxConnectionException">The handshake failed or timed out
    /// (<see cref="MuxClientOptions.ConnectTimeout"/>).</exception>
    /// <exception cref="InvalidOperationException">The options are invalid, or set <see cref="MuxClientOptions.Tls"/>.</exception>
    public static Task<MuxClient> ConnectAsync(IDuplexPipe pipe, MuxClientOptions? options = null, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(pipe);
        options ??= new MuxClientOptions();
        if (options.Tls is not null)
        {
            throw new InvalidOperationException(
                "MuxClientOptions.Tls is set, but a pipe is used as it is and cannot carry TLS. Connect with a Stream (for example " +
                "PipeReader.AsStream and PipeWriter.AsStream over your transport) or leave Tls null.");
        }

        return ConnectAsync(new DuplexPipeTransport(pipe), options, "pipe", cancellationToken);
    }

    /// <summary>Connects over an existing transport (in-memory pipes in tests and benchmarks); such a client cannot reconnect.</summary>
    internal static async Task<MuxClient> ConnectAsync(
        IMuxTransport transport, MuxClientOptions? options = null, string name = "in-memory", CancellationToken cancellationToken = default) =>
        new(await ClientRuntime.ConnectAsync(transport, options ?? new MuxClientOptions(), name, cancellationToken).ConfigureAwait(false));

    private static EndPoint RequireEndPoint(MuxClientOptions options) =>
        options.EndPoint ?? throw new InvalidOperationException(
            "MuxClientOptions.EndPoint is not set. Set it to the server's address, for example new IPEndPoint(IPAddress.Loopback, 5000), or " +
            "list several instances in EndPoints.");

    private void OnStateChanged(MuxClientState previous, MuxClientState state, Exception? error) =>
        StateChanged?.Invoke(this, new MuxClientStateChangedEventArgs(previous, state, error));

    /// <summary>Creates a proxy whose methods call the server through this client.</summary>
    /// <typeparam name="TService">A <see cref="MuxServiceAttribute"/> interface.</typeparam>
    /// <returns>The proxy. Cheap to create; all proxies of a client share its connection.</returns>
    /// <exception cref="InvalidOperationException">No proxy is registered for the interface.</exception>
    public TService CreateProxy<TService>()
        where TService : class
        => MuxServiceRegistry.CreateProxy<TService>(this);

    /// <summary>
    /// Creates a proxy whose every call carries <paramref name="options"/>: their
    /// <see cref="MuxCallOptions.Metadata"/>, <see cref="MuxCallOptions.Timeout"/> (in place of
    /// <see cref="MuxClientOptions.CallTimeout"/>) and <see cref="MuxCallOptions.WaitForConnection"/>.
    /// The client's other proxies are unchanged, and the client's interceptors see these calls too.
    /// Cheap: the options are checked, copied and their metadata encoded once, here; later changes
    /// to <paramref name="options"/> change no proxy made from it.
    /// </summary>
    /// <example><code>
    /// IUserService acme = client.CreateProxy&lt;IUserService&gt;(new MuxCallOptions
    /// {
    ///     Metadata = { ["tenant"] = "acme" }, Timeout = TimeSpan.FromSeconds(2), WaitForConnection = false,
    /// });
    /// </code></example>
    /// <typeparam name="TService">A <see cref="MuxServiceAttribute"/> interface.</typeparam>
    /// <param name="options">The settings of the proxy's calls.</param>
    /// <returns>The proxy; it shares this client's connection.</returns>
    /// <exception cref="InvalidOperationException">No proxy is registered for the interface.</exception>
    /// <exception cref="ArgumentOutOfRangeException"><see cref="MuxCallOptions.Timeout"/> is not
    /// positive (or <see cref="Timeout.InfiniteTimeSpan"/>).</exception>
    public TService CreateProxy<TService>(MuxCallOptions options)
        where TService : class
        => MuxServiceRegistry.CreateProxy<TService>(_invoker.Bind(options));

    /// <summary>
    /// Calls a method by id and returns its result. This is what proxies call; use a proxy instead. Completes exactly once: with the
    /// result; with <see cref="MuxRemoteException"/> if the server failed the call; with <see cref="TimeoutException"/> after
    /// <see cref="MuxClientOptions.CallTimeout"/>, counted from this call (waiting for a connection or a call slot, and a resend after a
    /// failure the server never ran, spend from it, and the server is sent what remains); with <see cref="OperationCanceledException"/>
    /// when
    /// <paramref name="cancellationToken"/> fires (the server is told to cancel the handler); or with <see cref="MuxConnectionException"/>
    /// when the connection is lost. A request that cannot be sent fails without touching the connection:
    /// <see cref="MessagePack.MessagePackSerializationException"/> when an argument cannot be serialized,
    /// <see cref="InvalidOperationException"/> when the request is larger than the server's MaxMessageSize (announced in its handshake; a
    /// request over one frame but within it goes in fragments).
    /// </summary>
    /// <typeparam name="TArguments">The argument list: a struct whose formatter (generated for proxies, or in the resolver of
    /// <see cref="MuxConnectionOptions.SerializerOptions"/>) writes it as a MessagePack array.</typeparam>
    /// <typeparam name="TResult">The method's result type.</typeparam>
    /// <param name="methodId">The method's wire id.</param>
    /// <param name="arguments">The arguments.</param>
    /// <param name="cancellationToken">Cancels the call.</param>
    /// <returns>The result.</returns>
    [EditorBrowsable(EditorBrowsableState.Never)] // Proxies call it; users call the proxy.
    public ValueTask<TResult> InvokeAsync<TArguments, TResult>(uint methodId, in TArguments arguments, CancellationToken cancellationToken = default)
        where TArguments : struct
        => _invoker.InvokeAsync<TArguments, TResult>(methodId, arguments, cancellationToken);

    /// <summary>Calls a method that returns no value; completes like
    /// <see cref="InvokeAsync{TArguments, TResult}(uint, in TArguments, CancellationToken)"/>.</summary>
    /// <typeparam name="TArguments">The argument list: a struct whose formatter (generated for proxies, or in the resolver of
    /// <see cref="MuxConnectionOptions.SerializerOptions"/>) writes it as a MessagePack array.</typeparam>
    /// <param name="methodId">The method's wire id.</param>
    /// <param name="arguments">The arguments.</param>
    /// <param name="cancellationToken">Cancels the call.</param>
    /// <returns>A task that completes when the server has run the method.</returns>
    [EditorBrowsable(EditorBrowsableState.Never)] // Proxies call it; users call the proxy.
    public ValueTask InvokeAsync<TArguments>(uint methodId, in TArguments arguments, CancellationToken cancellationToken = default)
        where TArguments : struct
        => _invoker.InvokeAsync(methodId, arguments, cancellationToken);

    /// <summary>Counters of the newest connection: frames, flushes, socket operations (of one open connection for a client over several
    /// instances: see <see cref="GetEndPointStatistics"/>).</summary>
    /// <returns>The counters so far; zeros before the first connection.</returns>
    public MuxConnectionStatistics GetStatistics() => Keeper.Latest?.GetStatistics() ?? default;

    /// <summary>Closes the client and its connection, and stops reconnecting. Calls still pending fail with
    /// <see cref="MuxConnectionException"/>, and so do later calls (as closed, not safe to retry).</summary>
    /// <returns>A task that completes when the connection is closed.</returns>
    public ValueTask DisposeAsync() => Keeper.DisposeAsync();

    /// <summary>
    /// What the client knows about each server instance it spreads calls over: its state, calls pending on it, calls sent to it. For
    /// diagnostics; cheap, but allocates the list.
    /// </summary>
    /// <returns>One entry per instance in use, in no particular order; empty for a client over one <see cref="MuxClientOptions.EndPoint"/>
    /// (see <see cref="State"/> and <see cref="PendingCalls"/>).</returns>
    public IReadOnlyList<MuxEndPointStatistics> GetEndPointStatistics()
        => Keeper.GetEndPointStatistics();

    /// <summary>
    /// Serves <typeparamref name="TService"/> to the server: its handlers can call it back on this client's connection
    /// (<see cref="MuxCallContext.Client"/>, then <see cref="MuxRemoteClient.CreateProxy{TService}()"/>). Calls run on the thread pool,
    /// never on the connection's reader loop, so a slow one holds up nothing else; their token fires when the server cancels the call (its
    /// caller gave up or it timed out) or the connection is lost. The service stays added across reconnects, and may be added before or
    /// after the client connects.
    /// </summary>
    /// <typeparam name="TService">A <see cref="MuxServiceAttribute"/> interface.</typeparam>
    /// <param name="implementation">The instance that serves every call; it must be thread-safe (calls run concurrently).</param>
    /// <returns>This client, for chaining.</returns>
    /// <exception cref="InvalidOperationException">No dispatcher is registered for the interface, or the client already serves a method
    /// with one of its ids (the same service added twice).</exception>
    public MuxClient AddService<TService>(TService implementation)
        where TService : class
    {
        ArgumentNullException.ThrowIfNull(implementation);
        _runtime.Services.Add<TService>(
            (service, method) => new SingletonServiceMethod<TService>(service, method, implementation),
            (existing, added) =>
                $"The client already serves {existing.Name} (method id 0x{added.Id:x8}); it cannot also serve {added.Name}. Add each service once.");
        return this;
    }

    /// <inheritdoc/>
    [EditorBrowsable(EditorBrowsableState.Never)] // Proxies call it; users call the proxy.
    public IAsyncEnumerable<TResult> InvokeServerStream<TArguments, TResult>(uint methodId, TArguments arguments, CancellationToken cancellationToken)
        where TArguments : struct
        => _invoker.InvokeServerStream<TArguments, TResult>(methodId, arguments, cancellationToken);

    /// <inheritdoc/>
    [EditorBrowsable(EditorBrowsableState.Never)] // Proxies call it; users call the proxy.
    public IAsyncEnumerable<TResult> InvokeDuplexStream<TArguments, TItem, TResult>(
        uint methodId, TArguments arguments, IAsyncEnumerable<TItem> items, CancellationToken cancellationToken)
        where TArguments : struct
        => _invoker.InvokeDuplexStream<TArguments, TItem, TResult>(methodId, arguments, items, cancellationToken);

    /// <inheritdoc/>
    [EditorBrowsable(EditorBrowsableState.Never)] // Proxies call it; users call the proxy.
    public ValueTask<TResult> InvokeClientStreamAsync<TArguments, TItem, TResult>(
        uint methodId, TArguments arguments, IAsyncEnumerable<TItem> items, CancellationToken cancellationToken)
        where TArguments : struct
        => _invoker.InvokeClientStreamAsync<TArguments, TItem, TResult>(methodId, arguments, items, cancellationToken);

    /// <inheritdoc/>
    [EditorBrowsable(EditorBrowsableState.Never)] // Proxies call it; users call the proxy.
    public ValueTask InvokeClientStreamAsync<TArguments, TItem>(
        uint methodId, TArguments arguments, IAsyncEnumerable<TItem> items, CancellationToken cancellationToken)
        where TArguments : struct
        => _invoker.InvokeClientStreamAsync(methodId, arguments, items, cancellationToken);
}
