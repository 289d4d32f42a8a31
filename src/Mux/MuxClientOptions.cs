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
    /// The server to connect to, for <see cref="MuxClient.ConnectAsync(MuxClientOptions, CancellationToken)"/>
    /// and Mux.Hosting's AddMuxClient: a TCP endpoint, a Unix domain socket, or a
    /// <see cref="MuxWebSocketEndPoint"/> for a server on ASP.NET Core. Defaults to <see langword="null"/> (must be set there).
    /// </summary>
    public EndPoint? EndPoint { get; set; }

    /// <summary>
    /// How long a call may wait for its response before it fails with <see cref="TimeoutException"/>,
    /// counted from when the call is made: waiting for a connection or a call slot, and a resend
    /// after a failure the server never ran, all spend from it. <see cref="Timeout.InfiniteTimeSpan"/>
    /// disables the deadline (a lost connection still fails the call). For a streaming call (an
    /// <see cref="System.Collections.Generic.IAsyncEnumerable{T}"/> argument or result) it bounds
    /// only the wait for a connection; the call's token ends the stream. Defaults to 30 seconds.
    /// </summary>
    public TimeSpan CallTimeout { get; set; } = TimeSpan.FromSeconds(30);

    /// <summary>How long connecting and the handshake may take; also how long the client's disposal
    /// waits for an <see cref="EndPointResolver"/> ask that ignores its cancellation. Defaults to 10 seconds.</summary>
    public TimeSpan ConnectTimeout { get; set; } = TimeSpan.FromSeconds(10);

    /// <summary>A token sent in the handshake, checked by servers that set
    /// <see cref="MuxServerOptions.AuthToken"/>. Defaults to <see langword="null"/> (none).</summary>
    public string? AuthToken { get; set; }

    /// <summary>
    /// Encrypts the connection with TLS and authenticates the server, using the BCL's own options:
    /// set <see cref="SslClientAuthenticationOptions.TargetHost"/> to the name on the server's
    /// certificate (when it is not set, the endpoint's host name or IP address is used), add
    /// <see cref="SslClientAuthenticationOptions.ClientCertificates"/> if the server asks for one, and
    /// <see cref="SslClientAuthenticationOptions.RemoteCertificateValidationCallback"/> to decide trust
    /// yourself. Mux offers the ALPN protocol <c>mux/1</c> when
    /// <see cref="SslClientAuthenticationOptions.ApplicationProtocols"/> is null (a list you set must
    /// include it) and fails the connection if the server does not choose it. The object is not
    /// modified. Applies to endpoints and to streams given to
    /// <see cref="MuxClient.ConnectAsync(Stream, MuxClientOptions?, CancellationToken)"/>; the server
    /// must set <see cref="MuxServerOptions.Tls"/>. Defaults to <see langword="null"/> (plaintext).
    /// </summary>
    public SslClientAuthenticationOptions? Tls { get; set; }

    // 0 until the warning that AuthToken travels in plaintext has been logged for these options;
    // claimed with Interlocked by whichever connect logs it, so it is logged once.
    private int _plaintextTokenWarned;

    internal bool TryClaimPlaintextTokenWarning() => Interlocked.Exchange(ref _plaintextTokenWarned, 1) == 0;

    /// <summary>
    /// Whether the client reconnects by itself when its connection is lost or the server sends
    /// GoAway. While it reconnects, new calls wait for the connection (within
    /// <see cref="CallTimeout"/> and their cancellation token), calls the server provably never ran
    /// are sent again on the new connection (within <see cref="RetryBudget"/>), and calls that were in flight on the lost connection
    /// fail with <see cref="MuxConnectionException"/> (they may have run, so they are never retried
    /// silently). When off, a lost connection closes the client, and so does a GoAway once the calls
    /// still running there have ended (over several instances, that instance; an
    /// <see cref="EndPointResolver"/> answer that names it again connects it afresh); new calls then
    /// fail at once, not safe to retry. Defaults to <see langword="true"/>.
    /// </summary>
    public bool AutoReconnect { get; set; } = true;

    /// <summary>
    /// How long the client waits after a failed reconnect attempt (a lost connection is replaced at
    /// once); each further failed attempt doubles the wait up to <see cref="ReconnectMaxDelay"/>,
    /// with up to 20% random jitter so that many clients of one restarted server do not all return
    /// at once. A connection lost within this long of being made, right after another one lost as
    /// soon (a server that accepts and then drops), counts as a failed attempt. Defaults to 100
    /// milliseconds.
    /// </summary>
    public TimeSpan ReconnectInitialDelay { get; set; } = TimeSpan.FromMilliseconds(100);

    /// <summary>
    /// The longest wait between two reconnect attempts. A server that comes back is found within
    /// about this long. Defaults to 5 seconds.
    /// </summary>
    public TimeSpan ReconnectMaxDelay { get; set; } = TimeSpan.FromSeconds(5);

    /// <summary>
    /// Several instances of the same server: the client keeps one multiplexed connection to each
    /// (each reconnecting on its own) and sends every call to the less busy (fewer calls pending) of
    /// two instances picked at random, so a slow instance receives less. A call an instance provably
    /// never ran is sent to another; an instance that sends GoAway gets no new calls. Instances over
    /// WebSocket are <see cref="MuxWebSocketEndPoint"/>s. Leave <see cref="EndPoint"/> null when you set this. Defaults to an empty list (one server, <see cref="EndPoint"/>).
    /// </summary>
    public IList<EndPoint> EndPoints { get; } = new List<EndPoint>();

    /// <summary>
    /// Finds the server instances at run time (for example through Microsoft.Extensions.ServiceDiscovery,
    /// see Mux.Hosting); the client balances over them like over <see cref="EndPoints"/>, which must
    /// then be empty, and re-resolves every <see cref="ResolveInterval"/> and when a connection is
    /// lost. A resolver that throws or finds nothing leaves the known instances in use; while none is
    /// known, the client asks again on the reconnect backoff and calls wait (within
    /// <see cref="CallTimeout"/>) for the first instance: see <see cref="IMuxEndPointResolver.ResolveAsync"/>.
    /// Defaults to <see langword="null"/> (none).
    /// </summary>
    public IMuxEndPointResolver? EndPointResolver { get; set; }

    /// <summary>
    /// The logical name of a service with several instances, for example <c>mux://users</c>
    /// (plaintext) or <c>muxs://users</c> (TLS). Mux.Hosting's AddMuxClient resolves it through
    /// Microsoft.Extensions.ServiceDiscovery (the configuration section <c>Services:users:mux</c>,
    /// or <c>Services:users:muxs</c>) and sets <see cref="EndPointResolver"/>; a client created
    /// without Mux.Hosting needs <see cref="EndPointResolver"/> set too, and then uses the name in its
    /// logs and errors only. Leave <see cref="EndPoint"/> and <see cref="EndPoints"/> empty when you set
    /// this. Defaults to <see langword="null"/> (none).
    /// </summary>
    public string? Service { get; set; }

    /// <summary>How often <see cref="EndPointResolver"/> is asked for the current instances, also
    /// after an ask that failed or found none while instances are known (it is asked sooner while
    /// none is, on the reconnect backoff, and soon after a connection is lost). Defaults to 30 seconds.</summary>
    public TimeSpan ResolveInterval { get; set; } = TimeSpan.FromSeconds(30);

    /// <summary>
    /// Whether a call made while the client has no connection (it is connecting, or reconnecting
    /// after a loss or the server's GoAway) waits for one, within its timeout and token.
    /// <see langword="false"/> fails such a call at once with <see cref="MuxConnectionException"/>
    /// (<see cref="MuxConnectionException.IsSafeToRetry"/> true: nothing was sent), like
    /// StackExchange.Redis's fail-fast backlog policy; so does a call the server provably never ran
    /// (sent just before the connection was lost, or above the server's GoAway), instead of waiting
    /// to be sent again on the next connection. A proxy bound to <see cref="MuxCallOptions"/> may
    /// choose otherwise for its calls (<see cref="MuxCallOptions.WaitForConnection"/>). Defaults to
    /// <see langword="true"/>.
    /// </summary>
    public bool WaitForConnection { get; set; } = true;

    /// <summary>
    /// How many calls the client sends again after a server reported it never ran them: refused as
    /// <see cref="MuxStatusCode.Overloaded"/> (past <see cref="MuxServerOptions.MaxConcurrentCalls"/>) or
    /// <see cref="MuxStatusCode.TooManyCalls"/>, or left unsent by the server's GoAway. A retry goes to another instance
    /// when the client has several (one that refused lately is picked less), and spends from the call's own timeout, fixed
    /// when the call was made. A call past the budget fails at once with <see cref="MuxRemoteException"/>
    /// (<see cref="MuxStatusCode.Overloaded"/>). A call that may have run is never sent again. <see langword="null"/> sends
    /// none again: each such call fails with what the server said. Defaults to a <see cref="MuxRetryBudget"/> with
    /// <see cref="MuxRetryBudget.Ratio"/> 0.2 and <see cref="MuxRetryBudget.MinRetriesPerSecond"/> 10.
    /// </summary>
    public MuxRetryBudget? RetryBudget { get; set; } = new();

    /// <summary>
    /// Run around every call the client makes, in this order (the first is the outermost); see
    /// <see cref="IMuxClientInterceptor"/>. Read when the client is created. Defaults to empty: the
    /// call path is then exactly what it is without interceptors.
    /// </summary>
    public IList<IMuxClientInterceptor> Interceptors { get; } = new List<IMuxClientInterceptor>();

    /// <summary>How a call picks its instance among several; the default, power of two choices, was
    /// measured to spread more evenly (see Balancing/EndPointBalancer).</summary>
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
