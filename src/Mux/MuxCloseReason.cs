namespace Mux;

/// <summary>Why a connection closed. Recorded once per connection and logged once.</summary>
public enum MuxCloseReason
{
    /// <summary>The connection is open.</summary>
    None = 0,

    /// <summary>This side disposed or stopped it.</summary>
    LocalShutdown,

    /// <summary>The peer closed the socket (end of stream).</summary>
    RemoteClosed,

    /// <summary>The peer said GoAway and every call it promised to serve has finished.</summary>
    GoAway,

    /// <summary>The peer sent a frame that breaks the protocol (bad length, unknown type, bad handshake),
    /// or the server refused the handshake (another protocol version, a wrong auth token, or
    /// <see cref="MuxServerOptions.Authenticate"/> refused the client): on both ends.</summary>
    ProtocolError,

    /// <summary>The socket failed (reset, unreachable, send or receive error).</summary>
    TransportError,

    /// <summary>The handshake did not complete in time.</summary>
    HandshakeTimeout,

    /// <summary>Nothing arrived from the peer, not even an answer to a keepalive Ping, within
    /// KeepAliveTimeout after KeepAliveInterval of silence: the peer or the path to it is dead. Also a
    /// peer that read nothing this side sent for as long (its queue stayed full, so this side read
    /// nothing from it either, its Pong included).</summary>
    KeepAliveTimeout,

    /// <summary>The server closed (gracefully, with GoAway) a connection that held no calls for
    /// <see cref="MuxServerOptions.IdleTimeout"/>.</summary>
    IdleTimeout,
}
