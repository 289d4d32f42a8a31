using MessagePack;

namespace Mux.Client;

/// <summary>
/// The side a <see cref="PendingCall"/> waits on: a <see cref="ClientConnection"/> for calls to a
/// server, or a server connection for calls it started to its client (Mux.Server.ServerConnection,
/// ReverseCalls). The call reads its result with the host's options and, when its caller gives up,
/// takes itself out of the host's table and tells the other side.
/// </summary>
internal interface IPendingCallHost
{
    /// <summary>The options results are read with. Immutable.</summary>
    MessagePackSerializerOptions SerializerOptions { get; }

    /// <summary>Removes a call its caller gave up on; false when something else completed it first.</summary>
    bool TryRemovePending(uint callId, PendingCall call);

    /// <summary>Tells the other side the caller gave up; best effort (the connection may be gone).</summary>
    void SendCancelQuietly(uint callId);
}
