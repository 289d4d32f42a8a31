using System.Net;
using System.Net.Security;
using Mux.Client.Balancing;
using Mux.Connection;
using Mux.Transport;

namespace Mux;

/// <summary>Settings of a <see cref="MuxClient"/>. Validated when the client connects.</summary>
public sealed class MuxClientOptions : MuxConnectionOptions
{
    /// <summary>
    /// The server to connect to: a TCP endpoint, a Unix domain socket, or a <see cref="MuxWebSocketEndPoint"/> for a
    /// server on ASP.NET Core. Defaults to <see langword="null"/>.
    /// </summary>
    public EndPoint? EndPoint { get; set; }

    /// <summary>
    /// How long a call may wait for its response before it fails with <see cref="TimeoutException"/>, counted from when
    /// it is made: waiting for a connection or a call slot, and resends, spend from it.
    /// <see cref="Timeout.InfiniteTimeSpan"/> disables it. For a streaming call it bounds only the wait for a connection;
    /// the call's token ends the stream. Defaults to 30 seconds.
    /// </summary>
    public TimeSpan CallTimeout { get; set; } = TimeSpan.FromSeconds(30);

    /// <summary>How long connecting and the handshake may take; also how long the client's disposal
    /// waits for an <see cref="EndPointResolver"/> ask that ignores its cancellation. Defaults to 10 seconds.</summary>
    public TimeSpan ConnectTimeout { get; set; } = TimeSpan.FromSeconds(10);

    /// <summary>A token sent in the handshake, checked by servers that set
    /// <see cref="MuxServerOptions.AuthToken"/>. Defaults to <see langword="null"/> (none).</summary>
    public string? AuthToken { get; set; }

    /// <summary>
    /// Encrypts the connection with TLS, also over streams given to
    /// <see cref="MuxClient.ConnectAsync(Stream, MuxClientOptions?, CancellationToken)"/>: set
    /// <see cref="SslClientAuthenticationOptions.TargetHost"/> to the name on the server's certificate (else the
    /// endpoint's host name or address is used), <see cref="SslClientAuthenticationOptions.ClientCertificates"/> if the
    /// server asks for one, and <see cref="SslClientAuthenticationOptions.RemoteCertificateValidationCallback"/> to decide
    /// trust yourself. Mux offers and requires the ALPN protocol <c>mux/1</c> (a list you set in
    /// <see cref="SslClientAuthenticationOptions.ApplicationProtocols"/> must include it). The object is not modified.
    /// Defaults to <see langword="null"/> (plaintext).
    /// </summary>
    public SslClientAuthenticationOptions? Tls { get; set; }

    // Claimed with Interlocked by whichever connect logs the plaintext AuthToken warning, so it is logged once.
    private int _plaintextTokenWarned;

    internal bool TryClaimPlaintextTokenWarning() => Interlocked.Exchange(ref _plaintextTokenWarned, 1) == 0;

    /// <summary>
    /// Whether the client reconnects by itself when its connection is lost or the server sends GoAway. Meanwhile new
    /// calls wait (within their timeout and token), calls the server provably never ran are sent again (within
    /// <see cref="RetryBudget"/>), and calls in flight on the lost connection fail with
    /// <see cref="MuxConnectionException"/>, since they may have run. When off, a lost connection, or a GoAway once its
    /// calls have ended, closes the client (over several instances, that instance); new calls then fail at once.
    /// Defaults to <see langword="true"/>.
    /// </summary>
    public bool AutoReconnect { get; set; } = true;

    /// <summary>
    /// How long the client waits after a failed reconnect attempt (a lost connection is replaced at once); each further
    /// failure doubles it up to <see cref="ReconnectMaxDelay"/>, with up to 20% jitter so the clients of a restarted
    /// server do not all return at once. A server that accepts and then drops at once counts as failing. Defaults to 100
    /// milliseconds.
    /// </summary>
    public TimeSpan ReconnectInitialDelay { get; set; } = TimeSpan.FromMilliseconds(100);

    /// <summary>
    /// The longest wait between two reconnect attempts. A server that comes back is found within
    /// about this long. Defaults to 5 seconds.
    /// </summary>
    public TimeSpan ReconnectMaxDelay { get; set; } = TimeSpan.FromSeconds(5);

    /// <summary>
    /// Several instances of the same server: the client keeps a connection to each and sends every call to the less
    /// busy of two picked at random, so a slow instance receives less. A call an instance provably never ran is sent to
    /// another; an instance that sends GoAway gets no new calls. Leave <see cref="EndPoint"/> null when you set this.
    /// Defaults to an empty list.
    /// </summary>
    public IList<EndPoint> EndPoints { get; } = new List<EndPoint>();

    /// <summary>
    /// Finds the server instances at run time (for example through Microsoft.Extensions.ServiceDiscovery); the client
    /// balances over them like over <see cref="EndPoints"/>, which must then be empty, and re-resolves every
    /// <see cref="ResolveInterval"/> and when a connection is lost. See <see cref="IMuxEndPointResolver.ResolveAsync"/>.
    /// Defaults to <see langword="null"/>.
    /// </summary>
    public IMuxEndPointResolver? EndPointResolver { get; set; }

    /// <summary>
    /// The logical name of a service with several instances, for example <c>mux://users</c> (plaintext) or
    /// <c>muxs://users</c> (TLS). Mux.Hosting's AddMuxClient resolves it through Microsoft.Extensions.ServiceDiscovery
    /// and sets <see cref="EndPointResolver"/>; without Mux.Hosting, set <see cref="EndPointResolver"/> too, and the name
    /// is used in logs and errors only. Leave <see cref="EndPoint"/> and <see cref="EndPoints"/> empty. Defaults to
    /// <see langword="null"/>.
    /// </summary>
    public string? Service { get; set; }

    /// <summary>How often <see cref="EndPointResolver"/> is asked for the current instances (sooner while none is known,
    /// and after a connection is lost). Defaults to 30 seconds.</summary>
    public TimeSpan ResolveInterval { get; set; } = TimeSpan.FromSeconds(30);

    /// <summary>
    /// Whether a call made while the client has no connection waits for one, within its timeout and token.
    /// <see langword="false"/> fails such a call at once with <see cref="MuxConnectionException"/>
    /// (<see cref="MuxConnectionException.IsSafeToRetry"/> true), and so a call the server provably never ran, instead
    /// of sending it again on the next connection. <see cref="MuxCallOptions.WaitForConnection"/> overrides it per
    /// proxy. Defaults to <see langword="true"/>.
    /// </summary>
    public bool WaitForConnection { get; set; } = true;

    /// <summary>
    /// How many calls the client sends again after a server reported it never ran them (refused as
    /// <see cref="MuxStatusCode.Overloaded"/> or <see cref="MuxStatusCode.TooManyCalls"/>, or left unsent by GoAway). A
    /// retry goes to another instance when there are several, and spends from the call's own timeout. A call past the
    /// budget fails at once with <see cref="MuxRemoteException"/> (<see cref="MuxStatusCode.Overloaded"/>). A call that may
    /// have run is never sent again. <see langword="null"/> sends none again. Defaults to a <see cref="MuxRetryBudget"/>
    /// with <see cref="MuxRetryBudget.Ratio"/> 0.2 and <see cref="MuxRetryBudget.MinRetriesPerSecond"/> 10.
    /// </summary>
    public MuxRetryBudget? RetryBudget { get; set; } = new();

    /// <summary>
    /// Run around every call the client makes, the first outermost; see <see cref="IMuxClientInterceptor"/>. Read when
    /// the client is created. Defaults to empty.
    /// </summary>
    public IList<IMuxClientInterceptor> Interceptors { get; } = new List<IMuxClientInterceptor>();

    /// <summary>Power of two choices spreads calls more evenly than the alternatives (see EndPointBalancer).</summary>

    internal BalancingPolicy Balancing { get; set; } = BalancingPolicy.PowerOfTwoChoices;

    internal bool IsBalanced => EndPoints.Count > 0 || EndPointResolver is not null || Service is not null;

    internal void Validate()
    {
        ValidateConnection(nameof(MuxClientOptions));
        OptionsValidation.RequirePositive(CallTimeout, nameof(MuxClientOptions), nameof(CallTimeout), allowInfinite: true);
        OptionsValidation.RequirePositive(ConnectTimeout, nameof(MuxClientOptions), nameof(ConnectTimeout), allowInfinite: true);
        if (Tls is not null)
        {
            TlsHandshake.ValidateClient(Tls);
        }

        if (IsBalanced)
        {
            if (EndPoint is not null)
            {
                throw new InvalidOperationException(
                    "MuxClientOptions.EndPoint is set together with EndPoints or EndPointResolver. Set EndPoint for one server, or EndPoints (or " +
                    "EndPointResolver) for several instances, not both.");
            }

            if (EndPoints.Count > 0 && EndPointResolver is not null)
            {
                throw new InvalidOperationException(
                    "MuxClientOptions.EndPoints and EndPointResolver are both set. Set EndPoints for a fixed list of instances, or " +
                    "EndPointResolver to find them at run time, not both.");
            }

            if (Service is not null && EndPointResolver is null)
            {
                throw new InvalidOperationException(EndPoints.Count > 0
                    ? $"MuxClientOptions.Service ('{Service}') is set together with EndPoints. Set Service to find the instances by name, or " +
                        "EndPoints for a fixed list, not both."
                    : $"MuxClientOptions.Service ('{Service}') is set but nothing resolves it: use Mux.Hosting's AddMuxClient, which resolves " +
                        "it through Microsoft.Extensions.ServiceDiscovery, or set EndPointResolver (for example to a " +
                        "Mux.Hosting.MuxServiceEndPointResolver), or set EndPoints instead.");
            }

            OptionsValidation.RequireNoNulls(EndPoints, nameof(MuxClientOptions), nameof(EndPoints), "set it to a server's address");
            OptionsValidation.RequirePositive(ResolveInterval, nameof(MuxClientOptions), nameof(ResolveInterval), allowInfinite: false);
        }

        OptionsValidation.RequirePositive(ReconnectInitialDelay, nameof(MuxClientOptions), nameof(ReconnectInitialDelay), allowInfinite: false);
        OptionsValidation.RequirePositive(ReconnectMaxDelay, nameof(MuxClientOptions), nameof(ReconnectMaxDelay), allowInfinite: false);
        if (ReconnectMaxDelay < ReconnectInitialDelay)
        {
            throw new InvalidOperationException(
                $"MuxClientOptions.ReconnectMaxDelay ({ReconnectMaxDelay}) is shorter than ReconnectInitialDelay ({ReconnectInitialDelay}); raise " +
                "ReconnectMaxDelay or lower ReconnectInitialDelay.");
        }

        OptionsValidation.RequireNoNulls(Interceptors, nameof(MuxClientOptions), nameof(Interceptors), "add an interceptor instance");
        RetryBudget?.Validate();
    }
}
