using Mux.Connection;

namespace Mux.Client;

/// <summary>
/// Where a <see cref="MuxClient"/> gets the connection for each call: one endpoint's
/// <see cref="ConnectionKeeper"/>, or an <see cref="Balancing.EndPointBalancer"/> over several.
/// </summary>
internal interface IConnectionSource : IAsyncDisposable
{
    /// <summary>The connection for a new call, or null when the caller must wait. Read by every
    /// call: no lock, no allocation.</summary>
    ClientConnection? Current { get; }

    /// <summary>The newest connection, open or not; null before the first one.</summary>
    ClientConnection? Latest { get; }

    /// <summary>Whether lost connections are replaced (and calls that never ran are retried).</summary>
    bool Reconnects { get; }

    MuxClientState State { get; }

    /// <summary>Completes when the client is closed for good.</summary>
    Task Completion { get; }

    /// <summary>Waits for a usable connection other than <paramref name="failed"/>, until
    /// <paramref name="deadline"/> (a <see cref="ClockDeadline"/> timestamp of
    /// <see cref="MuxClientOptions.TimeProvider"/>, or <see cref="ClockDeadline.Never"/>);
    /// <paramref name="ownTimeout"/> is the call's own timeout when it replaced CallTimeout (for the
    /// message of a call that found no connection in time), else null.</summary>
    ValueTask<ClientConnection> WaitForConnectionAsync(ClientConnection? failed, long deadline, TimeSpan? ownTimeout, CancellationToken cancellationToken);
}
