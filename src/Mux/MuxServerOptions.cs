using System.Net;
using System.Net.Security;
using System.Security.Claims;
using Mux.Connection;
using Mux.Transport;

namespace Mux;

/// <summary>Settings of a <see cref="MuxServer"/>. Validated when the server starts.</summary>
public sealed class MuxServerOptions : MuxConnectionOptions
{
    /// <summary>
    /// The address and port to listen on; port 0 picks a free port (read it back from
    /// <see cref="MuxServer.LocalEndPoint"/>). Required by <see cref="MuxServer.StartAsync"/>, unless
    /// the server's connections come only from its ASP.NET Core host (an endpoint mapped with
    /// Mux.AspNetCore's <c>MapMux</c>: then it listens on nothing of its own); not needed for
    /// connections handed to the server (<see cref="MuxServer.ConnectInProcessAsync"/>,
    /// <see cref="MuxServer.AcceptAsync"/>). Defaults to <see langword="null"/>.
    /// </summary>
    public EndPoint? EndPoint { get; set; }

    /// <summary>
    /// How many calls one connection may have running at once. The server advertises it in the
    /// handshake and a Mux client holds later calls back (they wait on the client, within their
    /// timeout) until an answer arrives; a request beyond it from a client that ignores it is
    /// refused with <see cref="MuxStatusCode.TooManyCalls"/>, the connection staying up and read.
    /// Defaults to 1000.
    /// </summary>
    public int MaxConcurrentCallsPerConnection { get; set; } = 1000;

    /// <summary>
    /// How many calls the whole server may run at once, across every connection (calls from the server to its clients not
    /// counted). A call that arrives when that many run is refused before its handler runs, with
    /// <see cref="MuxStatusCode.Overloaded"/>: it never ran, and a Mux client retries it within its
    /// <see cref="MuxClientOptions.RetryBudget"/>, on another server when it has several. Refusals are counted by the
    /// <c>mux.server.calls.overloaded</c> counter of the "Mux" meter and logged at most once a second. A streaming call counts
    /// until it has ended. Set it to what the server can run without its calls queueing for threads (a few times the cores for
    /// handlers that compute; more for handlers that wait on I/O), so that overload is refused at once rather than served
    /// late. Defaults to <see langword="null"/>: no limit but <see cref="MaxConcurrentCallsPerConnection"/>.
    /// </summary>
    public int? MaxConcurrentCalls { get; set; }

    /// <summary>How long a new connection has to complete its handshake, counted from the accept on
    /// <see cref="TimeProvider"/>; a connection that has not completed it by then is closed
    /// (<see cref="MuxCloseReason.HandshakeTimeout"/>, logged). With <see cref="Tls"/>, the TLS
    /// handshake has this long, and then Mux's own again. Defaults to 10 seconds.</summary>
    public TimeSpan HandshakeTimeout { get; set; } = TimeSpan.FromSeconds(10);

    /// <summary>How long <see cref="MuxServer.DisposeAsync"/> lets calls in flight finish before it
    /// cancels them and closes their connections (<see cref="MuxServer.StopAsync"/> takes a token
    /// instead, and under Mux.Hosting the host's stop passes its own, bounded by the host's
    /// <c>HostOptions.ShutdownTimeout</c>); also how long an idle connection's graceful close
    /// waits for its client (<see cref="IdleTimeout"/>). Defaults to 30 seconds.</summary>
    public TimeSpan ShutdownTimeout { get; set; } = TimeSpan.FromSeconds(30);

    /// <summary>The listen backlog of the accepting socket. Defaults to 512.</summary>
    public int ListenBacklog { get; set; } = 512;

    /// <summary>When set, a client must send this token in its handshake or be disconnected.
    /// Defaults to <see langword="null"/> (no check).</summary>
    public string? AuthToken { get; set; }

    /// <summary>
    /// Serves every connection over TLS, using the BCL's own options: set
    /// <see cref="SslServerAuthenticationOptions.ServerCertificate"/> (an <c>X509Certificate2</c> with
    /// its private key) or <see cref="SslServerAuthenticationOptions.ServerCertificateContext"/>. Client
    /// certificates are optional: set <see cref="SslServerAuthenticationOptions.ClientCertificateRequired"/>
    /// and <see cref="SslServerAuthenticationOptions.RemoteCertificateValidationCallback"/> to ask for and
    /// check them. Mux requires the ALPN protocol <c>mux/1</c> when
    /// <see cref="SslServerAuthenticationOptions.ApplicationProtocols"/> is null (a list you set must
    /// include it): a TLS client that does not ask for it is disconnected in the handshake. A client
    /// has <see cref="HandshakeTimeout"/> for the TLS handshake and again for Mux's own. The object is
    /// not modified. Applies to accepted sockets and to streams given to
    /// <see cref="MuxServer.AcceptAsync(Stream, CancellationToken)"/>. Defaults to
    /// <see langword="null"/> (plaintext; with <see cref="AuthToken"/> set on a network endpoint, the
    /// server logs a warning once at start).
    /// </summary>
    public SslServerAuthenticationOptions? Tls { get; set; }

    /// <summary>
    /// Whether a failed call's client sees the handler's exception message and type name. When
    /// <see langword="false"/>, a handler's unexpected exception reaches the client as
    /// <see cref="MuxStatusCode.HandlerFailed"/> with a generic message (the server's log has the
    /// exception), so internals such as SQL text, paths or stack details never leave the server. A
    /// handler that throws <see cref="MuxRemoteException"/> chooses the status code and message sent,
    /// whatever this is set to. Turn it on in development. Defaults to <see langword="false"/>.
    /// </summary>
    public bool EnableDetailedErrors { get; set; }

    /// <summary>
    /// Whether a handler passes its caller's deadline on to the Mux calls it makes (deadline
    /// propagation, docs/protocol.md "Deadlines"). When <see langword="true"/>, the handler of a
    /// call that carries a deadline runs with <see cref="MuxCallContext.Current"/> set, and every
    /// <see cref="MuxClient"/> call made on its flow (across awaits, until the handler's task
    /// completes) ends at the earlier of its own <see cref="MuxClientOptions.CallTimeout"/> and the
    /// served call's deadline, and sends that deadline on. Costs each such call an
    /// <see cref="ExecutionContext"/> and a <see cref="MuxCallContext"/>, and makes every MuxClient in
    /// the process look for a served call when it starts a call, which is why it is off. Off, handlers still see their caller's deadline through a
    /// <see cref="MuxCallContext"/> parameter and their token still fires at it.
    /// Defaults to <see langword="false"/>.
    /// </summary>
    public bool EnableCallContextPropagation { get; set; }

    /// <summary>Sets <see cref="EndPoint"/> to the given address and port.</summary>
    /// <param name="address">The address to bind, for example <see cref="IPAddress.Loopback"/>.</param>
    /// <param name="port">The port; 0 picks a free one.</param>
    /// <returns>These options, for chaining.</returns>
    public MuxServerOptions Listen(IPAddress address, int port)
    {
        ArgumentNullException.ThrowIfNull(address);
        EndPoint = new IPEndPoint(address, port);
        return this;
    }

    /// <summary>
    /// How long a connection may hold no calls before the server closes it gracefully: it sends
    /// GoAway (the client opens a new connection for its next call) and closes once the client has
    /// finished, as <see cref="MuxCloseReason.IdleTimeout"/>; a client that does not finish within
    /// <see cref="ShutdownTimeout"/> is closed then. A connection with a call running is never idle,
    /// nor one still in its handshake (<see cref="HandshakeTimeout"/> bounds that): the idle period
    /// starts when the handshake completes.
    /// Off by default: a Mux client reconnects at once when its connection closes, so closing idle
    /// ones would only churn connections; keepalive already removes dead ones. Turn it on to shed
    /// clients that connect and then hold connections they do not use. Defaults to
    /// <see cref="Timeout.InfiniteTimeSpan"/> (never).
    /// </summary>
    public TimeSpan IdleTimeout { get; set; } = Timeout.InfiniteTimeSpan;

    /// <summary>
    /// How long a call from the server to its client (through <see cref="MuxRemoteClient"/>) may
    /// take before it fails with <see cref="TimeoutException"/> and the client is told to cancel
    /// it, like <see cref="MuxClientOptions.CallTimeout"/> for calls the other way.
    /// <see cref="Timeout.InfiniteTimeSpan"/> means no limit. Defaults to 30 seconds.
    /// </summary>
    public TimeSpan ClientCallTimeout { get; set; } = TimeSpan.FromSeconds(30);

    /// <summary>
    /// Who is calling: runs once per connection, after the client's handshake arrived and before the
    /// server answers it, with what the server knows of the client
    /// (<see cref="MuxConnectionInfo.RemoteEndPoint"/>, the <see cref="MuxConnectionInfo.AuthToken"/>
    /// it sent, its TLS <see cref="MuxConnectionInfo.ClientCertificate"/>), and returns the user every
    /// call on that connection runs as (<see cref="MuxCallContext.User"/>). Returning
    /// <see langword="null"/> refuses the connection as <see cref="MuxStatusCode.Unauthenticated"/>;
    /// throwing <see cref="MuxRemoteException"/> refuses it with that exception's status and message
    /// (for example <see cref="MuxStatusCode.PermissionDenied"/>); any other exception refuses it as
    /// Unauthenticated (the exception goes to the server's log, its message to the client only with
    /// <see cref="EnableDetailedErrors"/>). A refused client's connect fails with
    /// <see cref="MuxConnectionException"/> naming the status. The token fires when the connection
    /// closes or <see cref="HandshakeTimeout"/> passes first. It runs on the thread pool; the
    /// connection takes no call until it has returned. Defaults to <see langword="null"/>: every
    /// connection is accepted (after the <see cref="AuthToken"/> check, if set) and its calls run as
    /// an anonymous user.
    /// </summary>
    public Func<MuxConnectionInfo, CancellationToken, ValueTask<ClaimsPrincipal?>>? Authenticate { get; set; }

    /// <summary>
    /// Run around every call the server serves, in this order (the first is the outermost); see
    /// <see cref="IMuxServerInterceptor"/>. Read when the server starts. Defaults to empty: the
    /// call path is then exactly what it is without interceptors.
    /// </summary>
    public IList<IMuxServerInterceptor> Interceptors { get; } = new List<IMuxServerInterceptor>();

    /// <summary>What is left of <see cref="HandshakeTimeout"/> at <paramref name="now"/> for a
    /// connection accepted at <paramref name="acceptedAt"/> (timestamps of <see cref="TimeProvider"/>,
    /// so that a fake clock moves it): zero once it has passed, infinite when it is.</summary>
    internal TimeSpan HandshakeTimeLeft(long acceptedAt, long now)
    {
        if (HandshakeTimeout == Timeout.InfiniteTimeSpan)
        {
            return Timeout.InfiniteTimeSpan;
        }

        TimeSpan left = HandshakeTimeout - TimeProvider.GetElapsedTime(acceptedAt, now);
        return left > TimeSpan.Zero ? left : TimeSpan.Zero;
    }

    /// <summary>Whether the server's connections also come from its host's endpoints (ASP.NET Core's
    /// MapMux sets it): then it starts without a listener when <see cref="EndPoint"/> is null.</summary>
    internal bool ServesHostEndpoints { get; set; }

    /// <summary>Checks every option; <paramref name="requireEndPoint"/> is false for a server that only
    /// serves connections handed to it (<see cref="MuxServer.Accept(System.IO.Pipelines.IDuplexPipe)"/>).</summary>
    internal void Validate(bool requireEndPoint = true)
    {
        if (requireEndPoint && EndPoint is null)
        {
            throw new InvalidOperationException(
                "MuxServerOptions.EndPoint is not set. Set it, for example options.Listen(IPAddress.Loopback, 5000), or use port 0 for any free " +
                "port.");
        }

        ValidateConnection(nameof(MuxServerOptions));
        if (MaxConcurrentCallsPerConnection < 1)
        {
            throw new InvalidOperationException(
                $"MuxServerOptions.MaxConcurrentCallsPerConnection is {MaxConcurrentCallsPerConnection}; it must be at least 1.");
        }

        if (MaxConcurrentCalls is < 1)
        {
            throw new InvalidOperationException(
                $"MuxServerOptions.MaxConcurrentCalls is {MaxConcurrentCalls}; it must be at least 1, or null for no limit.");
        }

        if (ListenBacklog < 1)
        {
            throw new InvalidOperationException($"MuxServerOptions.ListenBacklog is {ListenBacklog}; it must be at least 1.");
        }

        OptionsValidation.RequirePositive(HandshakeTimeout, nameof(MuxServerOptions), nameof(HandshakeTimeout), allowInfinite: true);
        OptionsValidation.RequirePositive(ShutdownTimeout, nameof(MuxServerOptions), nameof(ShutdownTimeout), allowInfinite: true);
        if (Tls is not null)
        {
            TlsHandshake.ValidateServer(Tls);
        }

        OptionsValidation.RequirePositive(IdleTimeout, nameof(MuxServerOptions), nameof(IdleTimeout), allowInfinite: true);
        OptionsValidation.RequirePositive(ClientCallTimeout, nameof(MuxServerOptions), nameof(ClientCallTimeout), allowInfinite: true);
        OptionsValidation.RequireNoNulls(Interceptors, nameof(MuxServerOptions), nameof(Interceptors), "add an interceptor instance");
    }
}
