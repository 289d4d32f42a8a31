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

    /// <summary>The peer broke the protocol (bad length, unknown type, bad handshake), or the server refused the
    /// handshake (another version, a wrong auth token, <see cref="MuxServerOptions.Authenticate"/>): on both ends.</summary>
    ProtocolError,

    /// <summary>The socket failed (reset, unreachable, send or receive error).</summary>
    TransportError,

    /// <summary>The handshake did not complete in time.</summary>
    HandshakeTimeout,

    /// <summary>Nothing arrived from the peer, not even a Pong, within KeepAliveTimeout after KeepAliveInterval of
    /// silence, or the peer read nothing this side sent for as long: the peer or the path to it is dead.</summary>

    KeepAliveTimeout,

    /// <summary>The server closed (gracefully, with GoAway) a connection that held no calls for
    /// <see cref="MuxServerOptions.IdleTimeout"/>.</summary>
    IdleTimeout,
}
