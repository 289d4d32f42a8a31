namespace Mux;

/// <summary>Where a <see cref="MuxClient"/> is in its connection's life; see <see cref="MuxClient.State"/>.</summary>
public enum MuxClientState
{
    /// <summary>The first connection is being established; calls wait for it.</summary>
    Connecting,

    /// <summary>A connection is open and takes calls.</summary>
    Connected,

    /// <summary>The connection was lost (or the server sent GoAway) and the client is establishing a
    /// new one, with backoff; calls wait for it (<see cref="MuxClientOptions.AutoReconnect"/>).</summary>
    Reconnecting,

    /// <summary>The client was disposed, or its connection was lost (or ended after the server's
    /// GoAway) with <see cref="MuxClientOptions.AutoReconnect"/> off; calls fail with <see cref="MuxConnectionException"/>.</summary>
    Closed,
}
