using System.Net;
using System.Net.Security;
using Microsoft.Extensions.Logging;
using Mux.Client.Balancing;
using Mux.Connection;
using Mux.Transport;
using MessagePack;

namespace Mux;

/// <summary>Settings of a <see cref="MuxClient"/>. Validated when the client connects.</summary>
public sealed class MuxClientOptions
{
    /// <summary>
    /// The server to connect to, for <see cref="MuxClient.ConnectAsync(MuxClientOptions, CancellationToken)"/>
    /// and Mux.Hosting's AddMuxClient. Defaults to <see langword="null"/> (must be set there).
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

    /// <summary>
    /// The largest frame this client accepts from the server, in bytes; a larger frame closes the
    /// connection (a Mux server sends a larger response in fragments that fit, bounded by
    /// <see cref="MaxMessageSize"/>). Between 4 KiB and 256 MiB. Defaults to 4 MiB.
    /// </summary>
    public int MaxFrameSize { get; set; } = 4 * 1024 * 1024;

    /// <summary>
    /// How many items of one stream (an <see cref="System.Collections.Generic.IAsyncEnumerable{T}"/>
    /// argument or result of a [MuxService] method) this side buffers before the producer on the
    /// other side must wait for it to read them: the stream's credit window, announced in the
    /// handshake. A slow reader thus slows its own stream's producer only, never the connection
    /// or other calls; each stream buffers at most this many items (each at most the maximum frame
    /// size). Between 1 and 65536. Defaults to 64.
    /// </summary>
    public int StreamWindow { get; set; } = 64;

    /// <summary>
    /// The largest response this client accepts, in bytes (a message's bytes after its frame
    /// header, across all its fragments). A larger response fails only its own call, with a
    /// <see cref="MuxRemoteException"/> whose code is <see cref="MuxStatusCode.MessageTooLarge"/>:
    /// the client announces the limit in the handshake so the server answers such a call with that
    /// error instead of sending it; the connection stays up. A request larger than the server's
    /// MaxMessageSize fails before it is sent, with <see cref="InvalidOperationException"/>.
    /// Separate from <see cref="MaxFrameSize"/>: large messages travel in fragments of
    /// <see cref="FragmentSize"/>. Between 4 KiB and 1 GiB. Defaults to 64 MiB.
    /// </summary>
    public int MaxMessageSize { get; set; } = 64 * 1024 * 1024;

    /// <summary>
    /// Requests larger than this many bytes are sent in fragments (frames of at most this size, or
    /// the server's MaxFrameSize if smaller) interleaved with the other calls' frames, so a large
    /// argument never holds the connection. Between 1 KiB and 16 MiB. Defaults to 64 KiB.
    /// </summary>
    public int FragmentSize { get; set; } = 64 * 1024;

    /// <summary>
    /// How arguments are written and results read (MessagePack-CSharp). Formatters the Mux generator
    /// emitted for the contracts' argument lists and <c>[MessagePackObject]</c> types are always
    /// consulted first (they keep Native AOT working), then this options' resolver. Set it to use
    /// your own resolver or LZ4 compression, for example
    /// <c>MessagePackSerializerOptions.Standard.WithCompression(MessagePackCompression.Lz4BlockArray)</c>;
    /// the server must use the same compression. A client reads what its server sends (results, stream
    /// items, the arguments of the server's calls) as a server reads its clients, since a server may be
    /// hostile too: when <see cref="MessagePackSerializerOptions.Security"/> is
    /// <see cref="MessagePackSecurity.TrustedData"/> (the default of every built-in options object) the
    /// client reads with <see cref="MessagePackSecurity.UntrustedData"/> instead (hash-collision-resistant
    /// dictionaries and a limit on nesting depth), so a hostile body fails only its own call (with
    /// <see cref="MessagePackSerializationException"/>; a server's call to this client is answered
    /// <see cref="MuxStatusCode.InvalidArguments"/>) and the connection stays open. Any other security
    /// you set is used as it is. Defaults to <see cref="MessagePackSerializerOptions.Standard"/>.
    /// </summary>
    public MessagePackSerializerOptions SerializerOptions { get; set; } = MessagePackSerializerOptions.Standard;

    /// <summary>A token sent in the handshake, checked by servers that set
    /// <see cref="MuxServerOptions.AuthToken"/>. Defaults to <see langword="null"/> (none).</summary>
    public string? AuthToken { get; set; }

    /// <summary>Where the client logs connection events. Defaults to <see langword="null"/>
    /// (no logging). A logger that throws loses that entry and nothing else: the client goes on.</summary>
    public ILoggerFactory? LoggerFactory { get; set; }

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
    /// are sent again on the new connection, and calls that were in flight on the lost connection
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
    /// How long nothing may arrive on a connection before this side sends a Ping (the peer answers
    /// with a Pong). A connection that carries calls or answers never pings; an idle one pings about
    /// once per interval, an 18-byte frame each way. 30 seconds stays under the idle limits of common
    /// NATs, firewalls and load balancers (often 60 seconds or more), so keepalive also keeps an idle
    /// connection's path open. <see cref="Timeout.InfiniteTimeSpan"/> turns keepalive off (then a
    /// peer that vanished without a FIN or reset is noticed only when a call times out). Defaults to
    /// 30 seconds.
    /// </summary>
    public TimeSpan KeepAliveInterval { get; set; } = TimeSpan.FromSeconds(30);

    /// <summary>
    /// How long after a keepalive Ping the peer has to answer (any frame counts) before the
    /// connection is closed as dead with <see cref="MuxCloseReason.KeepAliveTimeout"/>; calls on it
    /// fail with <see cref="MuxConnectionException"/> saying so. A peer that stopped reading for this
    /// long counts as dead too. A dead peer is noticed within KeepAliveInterval + KeepAliveTimeout.
    /// 20 seconds is Kestrel's HTTP/2 keepalive-ping timeout: long enough for a busy or paused (GC)
    /// process on a slow network, short enough to fail calls well within their own timeout.
    /// <see cref="Timeout.InfiniteTimeSpan"/> never closes (Pings are still sent). Defaults to 20 seconds.
    /// </summary>
    public TimeSpan KeepAliveTimeout { get; set; } = TimeSpan.FromSeconds(20);

    /// <summary>
    /// The clock of the keepalive timers, of calls' deadlines (<see cref="CallTimeout"/>), of the
    /// waits between reconnect attempts and of the <see cref="EndPointResolver"/>'s rounds. Tests
    /// set a fake one (for example <c>FakeTimeProvider</c> from Microsoft.Extensions.TimeProvider.Testing)
    /// to move time by hand. Defaults to <see cref="TimeProvider.System"/>.
    /// </summary>
    public TimeProvider TimeProvider { get; set; } = TimeProvider.System;

    /// <summary>
    /// How many bytes of requests may wait for the connection's socket. When the server stops
    /// reading (it is stuck, or its machine is overloaded), requests pile up here; past this, a new
    /// call waits on the client, asynchronously and within <see cref="CallTimeout"/> and its
    /// cancellation token, until the socket takes what is queued, instead of growing the buffer
    /// without end. A caller that finds room adds its whole request, so the queue may pass the limit
    /// by one request per caller arriving at that moment. Must be at least 4096. Defaults to 1 MiB,
    /// like <see cref="MuxServerOptions.MaxOutboundBytesPerConnection"/>: hundreds of callers' small
    /// requests never come near it, and a stuck connection holds at most about that much.
    /// </summary>
    public int MaxOutboundBytesPerConnection { get; set; } = 1024 * 1024;

    /// <summary>
    /// Several instances of the same server: the client keeps one multiplexed connection to each
    /// (each reconnecting on its own) and sends every call to the less busy (fewer calls pending) of
    /// two instances picked at random, so a slow instance receives less. A call an instance provably never ran is sent to
    /// another; an instance that sends GoAway gets no new calls. Leave <see cref="EndPoint"/> null when
    /// you set this. Defaults to an empty list (one server, <see cref="EndPoint"/>).
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
    /// Run around every call the client makes, in this order (the first is the outermost); see
    /// <see cref="IMuxClientInterceptor"/>. Read when the client is created. Defaults to empty: the
    /// call path is then exactly what it is without interceptors.
    /// </summary>
    public IList<IMuxClientInterceptor> Interceptors { get; } = new List<IMuxClientInterceptor>();

    /// <summary>
    /// The largest metadata a call from the server to this client may carry (see
    /// <see cref="MuxRemoteClient"/>), in bytes of its encoded map; announced in the handshake, so the
    /// server fails such a call before sending it, and one that arrives with more fails alone with
    /// <see cref="MuxStatusCode.MessageTooLarge"/>. What this client may send is bounded by its
    /// server's <see cref="MuxServerOptions.MaxMetadataSize"/>. At least 1; a value above
    /// <see cref="MaxMessageSize"/> acts as MaxMessageSize. Defaults to 8 KiB.
    /// </summary>
    public int MaxMetadataSize { get; set; } = Protocol.MetadataSection.DefaultMaxSize;

    /// <summary>How a call picks its instance among several; the default, power of two choices, was
    /// measured to spread more evenly (see Balancing/EndPointBalancer).</summary>
    internal BalancingPolicy Balancing { get; set; } = BalancingPolicy.PowerOfTwoChoices;

    /// <summary>Whether the client spreads calls over several instances.</summary>
    internal bool IsBalanced => EndPoints.Count > 0 || EndPointResolver is not null || Service is not null;

    internal void Validate()
    {
        OptionsValidation.RequireConnectionSettings(nameof(MuxClientOptions), SerializerOptions, TimeProvider, MaxFrameSize, FragmentSize, MaxMessageSize, MaxMetadataSize, StreamWindow, MaxOutboundBytesPerConnection, KeepAliveInterval, KeepAliveTimeout);
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
                throw new InvalidOperationException("MuxClientOptions.EndPoint is set together with EndPoints or EndPointResolver. Set EndPoint for one server, or EndPoints (or EndPointResolver) for several instances, not both.");
            }

            if (EndPoints.Count > 0 && EndPointResolver is not null)
            {
                throw new InvalidOperationException("MuxClientOptions.EndPoints and EndPointResolver are both set. Set EndPoints for a fixed list of instances, or EndPointResolver to find them at run time, not both.");
            }

            if (Service is not null && EndPointResolver is null)
            {
                throw new InvalidOperationException(EndPoints.Count > 0
                    ? $"MuxClientOptions.Service ('{Service}') is set together with EndPoints. Set Service to find the instances by name, or EndPoints for a fixed list, not both."
                    : $"MuxClientOptions.Service ('{Service}') is set but nothing resolves it: use Mux.Hosting's AddMuxClient, which resolves it through Microsoft.Extensions.ServiceDiscovery, or set EndPointResolver (for example to a Mux.Hosting.MuxServiceEndPointResolver), or set EndPoints instead.");
            }

            OptionsValidation.RequireNoNulls(EndPoints, nameof(MuxClientOptions), nameof(EndPoints), "set it to a server's address");
            OptionsValidation.RequirePositive(ResolveInterval, nameof(MuxClientOptions), nameof(ResolveInterval), allowInfinite: false);
        }

        OptionsValidation.RequirePositive(ReconnectInitialDelay, nameof(MuxClientOptions), nameof(ReconnectInitialDelay), allowInfinite: false);
        OptionsValidation.RequirePositive(ReconnectMaxDelay, nameof(MuxClientOptions), nameof(ReconnectMaxDelay), allowInfinite: false);
        if (ReconnectMaxDelay < ReconnectInitialDelay)
        {
            throw new InvalidOperationException($"MuxClientOptions.ReconnectMaxDelay ({ReconnectMaxDelay}) is shorter than ReconnectInitialDelay ({ReconnectInitialDelay}); raise ReconnectMaxDelay or lower ReconnectInitialDelay.");
        }

        OptionsValidation.RequireNoNulls(Interceptors, nameof(MuxClientOptions), nameof(Interceptors), "add an interceptor instance");
    }
}
