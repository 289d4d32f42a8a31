using System.IO.Pipelines;
using System.Net;
using System.Security.Cryptography.X509Certificates;

namespace Mux.Transport;

/// <summary>
/// The byte stream under one multiplexed connection: a socket in production, two crossed
/// in-memory pipes in unit tests.
/// </summary>
internal interface IMuxTransport : IDuplexPipe, IAsyncDisposable
{
    /// <summary>Socket receive operations so far: stream reads over a stream (over TLS, each returns
    /// one or more decrypted records); 0 for in-memory transports.</summary>
    long SocketReceives { get; }

    /// <summary>Socket send operations so far: stream writes over a stream (one per flush of the
    /// output, per 64 KiB of a larger one); 0 for in-memory transports.</summary>
    long SocketSends { get; }

    /// <summary>The peer's socket address; null when there is no socket (a pipe, a stream without one).</summary>
    EndPoint? RemoteEndPoint => null;

    /// <summary>The certificate the peer presented in the TLS handshake; null without TLS or when
    /// it presented none.</summary>
    X509Certificate2? RemoteCertificate => null;

    void Start();

    /// <summary>Drops the connection at once, without flushing.</summary>
    void Abort();
}
