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
    /// The address and port to listen on; port 0 picks a free port (read it from <see cref="MuxServer.LocalEndPoint"/>).
    /// Required by <see cref="MuxServer.StartAsync"/> unless the connections come only from its ASP.NET Core host
    /// (<c>MapMux</c>) or are handed to the server (<see cref="MuxServer.ConnectInProcessAsync"/>,
    /// <see cref="MuxServer.AcceptAsync"/>). Defaults to <see langword="null"/>.
    /// </summary>
    public EndPoint? EndPoint { get; set; }

    /// <summary>
    /// How many calls one connection may have running at once. Announced in the handshake: a Mux client holds later
    /// calls back, within their timeout; a request beyond it from a client that ignores it is refused with
    /// <see cref="MuxStatusCode.TooManyCalls"/>, the connection staying up. Defaults to 1000.
    /// </summary>
    public int MaxConcurrentCallsPerConnection { get; set; } = 1000;

    /// <summary>
    /// How many calls the whole server may run at once, across every connection (calls to its clients not counted). A
    /// call beyond it is refused before its handler runs with <see cref="MuxStatusCode.Overloaded"/>, which a Mux client
    /// retries within its <see cref="MuxClientOptions.RetryBudget"/>, on another server when it has several. Refusals are
    /// counted by <c>mux.server.calls.overloaded</c> and logged at most once a second. A streaming call counts until it
    /// has ended. Set it to what the server runs without calls queueing for threads, so overload is refused at once
    /// rather than served late. Defaults to <see langword="null"/>: no limit but
    /// <see cref="MaxConcurrentCallsPerConnection"/>.
    /// </summary>
    public int? MaxConcurrentCalls { get; set; }

    /// <summary>How long a new connection has from its accept to complete its handshake before it is closed
    /// (<see cref="MuxCloseReason.HandshakeTimeout"/>). With <see cref="Tls"/>, the TLS handshake has this long, and
    /// then Mux's own again. Defaults to 10 seconds.</summary>
    public TimeSpan HandshakeTimeout { get; set; } = TimeSpan.FromSeconds(10);

    /// <summary>How long <see cref="MuxServer.DisposeAsync"/> lets calls in flight finish before it cancels them
    /// (<see cref="MuxServer.StopAsync"/> takes a token instead); also how long an idle connection's graceful close waits
    /// for its client (<see cref="IdleTimeout"/>). Defaults to 30 seconds.</summary>
    public TimeSpan ShutdownTimeout { get; set; } = TimeSpan.FromSeconds(30);

    /// <summary>The listen backlog of the accepting socket. Defaults to 512.</summary>
    public int ListenBacklog { get; set; } = 512;

    /// <summary>When set, a client must send this token in its handshake or be disconnected.
    /// Defaults to <see langword="null"/> (no check).</summary>
    public string? AuthToken { get; set; }

    /// <summary>
    /// Serves every connection, and streams given to <see cref="MuxServer.AcceptAsync(Stream, CancellationToken)"/>, over
    /// TLS: set <see cref="SslServerAuthenticationOptions.ServerCertificate"/> (with its private key) or
    /// <see cref="SslServerAuthenticationOptions.ServerCertificateContext"/>; set
    /// <see cref="SslServerAuthenticationOptions.ClientCertificateRequired"/> and
    /// <see cref="SslServerAuthenticationOptions.RemoteCertificateValidationCallback"/> to ask for client certificates.
    /// Mux requires the ALPN protocol <c>mux/1</c> (a list you set in
    /// <see cref="SslServerAuthenticationOptions.ApplicationProtocols"/> must include it). The object is not modified.
    /// Defaults to <see langword="null"/> (plaintext; with <see cref="AuthToken"/> set on a network endpoint, the server
    /// logs a warning once at start).
    /// </summary>
    public SslServerAuthenticationOptions? Tls { get; set; }

    /// <summary>
    /// Whether a failed call's client sees the handler's exception message and type name. When <see langword="false"/>,
    /// it gets <see cref="MuxStatusCode.HandlerFailed"/> with a generic message, so internals such as SQL text or paths
    /// never leave the server. A <see cref="MuxRemoteException"/> chooses its own status and message either way. Turn it
    /// on in development. Defaults to <see langword="false"/>.
    /// </summary>
    public bool EnableDetailedErrors { get; set; }

    /// <summary>
    /// Whether a handler passes its caller's deadline on to the Mux calls it makes. When <see langword="true"/>, the
    /// handler of a call with a deadline runs with <see cref="MuxCallContext.Current"/> set, and every
    /// <see cref="MuxClient"/> call on its flow ends at the earlier of its own <see cref="MuxClientOptions.CallTimeout"/>
    /// and that deadline, and sends it on. It costs each such call an <see cref="ExecutionContext"/> and a
    /// <see cref="MuxCallContext"/>, and every MuxClient call a look-up, which is why it is off. Defaults to
    /// <see langword="false"/>.
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
    /// How long a connection may hold no calls, from its handshake on, before the server sends GoAway and closes it as
    /// <see cref="MuxCloseReason.IdleTimeout"/> once the client has finished (or after <see cref="ShutdownTimeout"/>).
    /// Off by default: a Mux client reconnects at once, so closing idle connections would only churn them, and keepalive
    /// already removes dead ones. Turn it on to shed clients that hold connections they do not use. Defaults to
    /// <see cref="Timeout.InfiniteTimeSpan"/> (never).
    /// </summary>
    public TimeSpan IdleTimeout { get; set; } = Timeout.InfiniteTimeSpan;

    /// <summary>
    /// <see cref="MuxClientOptions.CallTimeout"/> for calls from the server to its client (<see cref="MuxRemoteClient"/>):
    /// past it the call fails with <see cref="TimeoutException"/> and the client is told to cancel it.
    /// <see cref="Timeout.InfiniteTimeSpan"/> means no limit. Defaults to 30 seconds.
    /// </summary>
    public TimeSpan ClientCallTimeout { get; set; } = TimeSpan.FromSeconds(30);

    /// <summary>
    /// Runs once per connection, on the thread pool, between the client's handshake and the server's answer, with what
    /// the server knows of the client (<see cref="MuxConnectionInfo.RemoteEndPoint"/>,
    /// <see cref="MuxConnectionInfo.AuthToken"/>, <see cref="MuxConnectionInfo.ClientCertificate"/>); returns the user its
    /// calls run as (<see cref="MuxCallContext.User"/>). <see langword="null"/> refuses the connection as
    /// <see cref="MuxStatusCode.Unauthenticated"/>; a <see cref="MuxRemoteException"/> refuses it with its status and
    /// message; any other exception as Unauthenticated (its message reaches the client only with
    /// <see cref="EnableDetailedErrors"/>). The refused client's connect fails with <see cref="MuxConnectionException"/>.
    /// The token fires when the connection closes or <see cref="HandshakeTimeout"/> passes. Defaults to
    /// <see langword="null"/>: every connection passing the <see cref="AuthToken"/> check is accepted, as an anonymous user.
    /// </summary>
    public Func<MuxConnectionInfo, CancellationToken, ValueTask<ClaimsPrincipal?>>? Authenticate { get; set; }

    /// <summary>
    /// Run around every call the server serves, the first outermost; see <see cref="IMuxServerInterceptor"/>. Read when
    /// the server starts. Defaults to empty.
    /// </summary>
    public IList<IMuxServerInterceptor> Interceptors { get; } = new List<IMuxServerInterceptor>();

    /// <summary>Timestamps of <see cref="TimeProvider"/>, so a fake clock moves it.</summary>
    internal TimeSpan HandshakeTimeLeft(long acceptedAt, long now)
    {
        if (HandshakeTimeout == Timeout.InfiniteTimeSpan)
        {
            return Timeout.InfiniteTimeSpan;
        }

        TimeSpan left = HandshakeTimeout - TimeProvider.GetElapsedTime(acceptedAt, now);
        return left > TimeSpan.Zero ? left : TimeSpan.Zero;
    }

    /// <summary>Set by MapMux: the server then starts without a listener when <see cref="EndPoint"/> is null.</summary>
    internal bool ServesHostEndpoints { get; set; }

    internal
 void Validate(bool requireEndPoint = true)
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
