using System.IO.Pipelines;

namespace Mux.Transport;

/// <summary>
/// The byte stream under one multiplexed connection: a socket in production, two crossed
/// in-memory pipes in unit tests.
/// </summary>
internal interface IMuxTransport : IDuplexPipe, IAsyncDisposable
{
    /// <summary>Socket receive operations so far (0 for in-memory transports).</summary>
    long SocketReceives { get; }

    /// <summary>Socket send operations so far (0 for in-memory transports).</summary>
    long SocketSends { get; }

    /// <summary>Starts moving bytes.</summary>
    void Start();

    /// <summary>Drops the connection at once, without flushing.</summary>
    void Abort();
}
