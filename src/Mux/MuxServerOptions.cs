using System.Net;
using System.Net.Security;
using Microsoft.Extensions.Logging;
using Mux.Connection;
using Mux.Transport;
using MessagePack;

namespace Mux;

/// <summary>Settings of a <see cref="MuxServer"/>. Validated when the server starts.</summary>
public sealed class MuxServerOptions
{
    /// <summary>
    /// The address and port to listen on; port 0 picks a free port (read it back from
    /// <see cref="MuxServer.LocalEndPoint"/>). Required: defaults to <see langword="null"/>.
    /// </summary>
    public EndPoint? EndPoint { get; set; }

    /// <summary>
    /// The largest frame the server accepts, in bytes; a client that sends a larger one is
    /// disconnected. Must be at least 4 KiB. Defaults to 4 MiB.
    /// </summary>
    public int MaxFrameSize { get; set; } = 4 * 1024 * 1024;

    /// <summary>
    /// How many calls one connection may have running at once. The server advertises it in the
    /// handshake and a Mux client holds later calls back (they wait on the client, within their
    /// timeout) until an answer arrives; a request beyond it from a client that ignores it is
    /// refused with <see cref="MuxStatusCode.TooManyCalls"/>, the connection staying up and read.
    /// Defaults to 1000.
    /// </summary>
    public int MaxConcurrentCallsPerConnection { get; set; } = 1000;

    /// <summary>
    /// How many bytes of answers may wait for one connection's socket. When a client stops reading,
    /// its answers pile up here; past this the server runs no new request from that connection
    /// until the socket takes them (calls already running still answer), so a peer that never
    /// reads costs a bounded amount of memory. Defaults to 1 MiB: a thousand 1 KiB answers, or a
    /// few large ones, which keeps a busy connection's batches whole while bounding a stuck one.
    /// </summary>
    public int MaxOutboundBytesPerConnection { get; set; } = 1024 * 1024;

    /// <summary>How long a new connection has to complete its handshake. Defaults to 10 seconds.</summary>
    public TimeSpan HandshakeTimeout { get; set; } = TimeSpan.FromSeconds(10);

    /// <summary>How long <see cref="MuxServer.DisposeAsync"/> lets calls in flight finish before it
    /// cancels them and closes their connections (<see cref="MuxServer.StopAsync"/> takes a token
    /// instead). Defaults to 30 seconds.</summary>
    public TimeSpan ShutdownTimeout { get; set; } = TimeSpan.FromSeconds(30);

    /// <summary>The listen backlog of the accepting socket. Defaults to 512.</summary>
    public int ListenBacklog { get; set; } = 512;

    /// <summary>When set, a client must send this token in its handshake or be disconnected.
    /// Defaults to <see langword="null"/> (no check).</summary>
    public string? AuthToken { get; set; }

    /// <summary>Where the server logs connection events and handler failures. Defaults to
    /// <see langword="null"/> (no logging).</summary>
    public ILoggerFactory? LoggerFactory { get; set; }

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
    /// How arguments are read and results written (MessagePack-CSharp). Formatters the Mux generator
    /// emitted for the contracts are always consulted first, then this options' resolver. A server
    /// reads whatever any client sends, so when <see cref="MessagePackSerializerOptions.Security"/> is
    /// <see cref="MessagePackSecurity.TrustedData"/> (the default of every built-in options object) the
    /// server reads with <see cref="MessagePackSecurity.UntrustedData"/> instead: hash-collision-resistant
    /// dictionaries and a limit on nesting depth, so a hostile body fails its own call with
    /// <see cref="MuxStatusCode.InvalidArguments"/> instead of exhausting the stack or the CPU. Any other
    /// security you set is used as it is. Defaults to <see cref="MessagePackSerializerOptions.Standard"/>.
    /// </summary>
    public MessagePackSerializerOptions SerializerOptions { get; set; } = MessagePackSerializerOptions.Standard;

    /// <summary>Checks every option; <paramref name="requireEndPoint"/> is false for a server that only
    /// serves connections handed to it (<see cref="MuxServer.Accept(System.IO.Pipelines.IDuplexPipe)"/>).</summary>
    internal void Validate(bool requireEndPoint = true)
    {
        if (requireEndPoint && EndPoint is null)
        {
            throw new InvalidOperationException("MuxServerOptions.EndPoint is not set. Set it, for example options.Listen(IPAddress.Loopback, 5000), or use port 0 for any free port.");
        }

        if (SerializerOptions is null)
        {
            throw new InvalidOperationException("MuxServerOptions.SerializerOptions is null. Leave it at its default (MessagePackSerializerOptions.Standard) or set it to the options you serialize with.");
        }

        OptionsValidation.RequireFrameSize(MaxFrameSize, nameof(MuxServerOptions));
        if (MaxConcurrentCallsPerConnection < 1)
        {
            throw new InvalidOperationException($"MuxServerOptions.MaxConcurrentCallsPerConnection is {MaxConcurrentCallsPerConnection}; it must be at least 1.");
        }

        if (MaxOutboundBytesPerConnection < 4096)
        {
            throw new InvalidOperationException($"MuxServerOptions.MaxOutboundBytesPerConnection is {MaxOutboundBytesPerConnection}; it must be at least 4096 bytes (the default is 1 MiB).");
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
    }
}
