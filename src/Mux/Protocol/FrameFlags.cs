namespace Mux.Protocol;

/// <summary>Per-frame flag bits: <see cref="MoreFragments"/> for messages split across frames, and the optional parts
/// of a Request (<see cref="TraceContext"/>, <see cref="Deadline"/>, <see cref="Metadata"/>), each sent only to peers
/// that read it.</summary>
[Flags]
internal enum FrameFlags : byte
{
    None = 0,

    /// <summary>More fragments of this message follow (docs/protocol.md, *Fragments*). On a Request, Response or Error it
    /// marks the first fragment, which then carries the message's total size (u32) before its type-specific header; on a
    /// Continuation it marks every fragment but the last.</summary>
    MoreFragments = 1,

    /// <summary>A Request carries the caller's W3C trace context between its method id and its arguments (see
    /// TraceContextHeader). Only sent to a server whose HelloAck announced <c>traceContext</c>.</summary>
    TraceContext = 2,

    /// <summary>A Request carries the caller's remaining time straight after its method id (see
    /// <see cref="DeadlineHeader"/>). Protocol version 2.</summary>
    Deadline = 4,

    /// <summary>The frame belongs to a call the server started (docs/protocol.md, "Calls from server to client"): its call
    /// id is in the server's own id space, so it never collides with the client's.</summary>
    ServerInitiated = 8,

    /// <summary>A Request's body starts with the call's <see cref="MetadataSection"/>, before the arguments. Only sent to
    /// a peer whose handshake announced <c>maxMetadataSize</c>: a peer that did not closes the connection on the flag.</summary>
    Metadata = 16,
}
