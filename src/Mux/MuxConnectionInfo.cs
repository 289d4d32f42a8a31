using System.Collections.Concurrent;
using System.Net;
using System.Security.Cryptography.X509Certificates;

namespace Mux;

/// <summary>
/// What a server knows about a connection and the client at its other end: passed to
/// <see cref="MuxServerOptions.Authenticate"/> once per connection, and to every call's handler and
/// interceptors as <see cref="MuxCallContext.Connection"/>. One object per connection.
/// </summary>
public sealed class MuxConnectionInfo
{
    internal MuxConnectionInfo(EndPoint? remoteEndPoint, string? authToken, X509Certificate2? clientCertificate)
    {
        RemoteEndPoint = remoteEndPoint;
        AuthToken = authToken;
        ClientCertificate = clientCertificate;
    }

    /// <summary>The peer's socket address (an <see cref="IPEndPoint"/>, or a Unix domain socket's);
    /// <see langword="null"/> for a connection over a stream or pipe without a socket.</summary>
    public EndPoint? RemoteEndPoint { get; }

    /// <summary>The token the client sent in its handshake (its <see cref="MuxClientOptions.AuthToken"/>),
    /// for <see cref="MuxServerOptions.Authenticate"/> to check; <see langword="null"/> when it sent
    /// none, and on a client's side of a connection (for calls its server makes to it).</summary>
    public string? AuthToken { get; }

    /// <summary>The certificate the client presented in the TLS handshake (see
    /// <see cref="System.Net.Security.SslServerAuthenticationOptions.ClientCertificateRequired"/>);
    /// <see langword="null"/> without TLS, when the client presented none, and on a client's side.</summary>
    public X509Certificate2? ClientCertificate { get; }

    /// <summary>Anything the application keeps for the connection's life (for example what
    /// <see cref="MuxServerOptions.Authenticate"/> looked up, for handlers and interceptors to read).
    /// Thread-safe. Defaults to empty.</summary>
    public IDictionary<string, object?> Properties { get; } = new ConcurrentDictionary<string, object?>(StringComparer.Ordinal);
}
