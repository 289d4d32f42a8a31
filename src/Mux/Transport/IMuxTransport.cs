using System.IO.Pipelines;
using System.Net;
using System.Security.Cryptography.X509Certificates;

namespace Mux.Transport;

/// <summary>The byte stream under one multiplexed connection.</summary>
internal interface IMuxTransport : IDuplexPipe, IAsyncDisposable
{
    /// <summary>Stream reads over a stream; 0 for in-memory transports.</summary>
    long SocketReceives { get; }

    /// <summary>Stream writes over a stream (one per flush, per 64 KiB of a larger one); 0 for in-memory transports.</summary>
    long SocketSends { get; }

    EndPoint? RemoteEndPoint => null;

    X509Certificate2? RemoteCertificate => null;


    void Start();

    /// <summary>Drops the connection at once, without flushing.</summary>
    void Abort();
}
