namespace Mux.Protocol;

/// <summary>The optional parts of a Request are each sent only to peers that read them.</summary>
[Flags]
internal enum FrameFlags : byte
{
    None = 0,

    /// <summary>On a Request, Response or Error: the first fragment, which carries the message's total size (u32); on a
    /// Continuation: every fragment but the last.</summary>
    MoreFragments = 1,

    /// <summary>Only sent to a server whose HelloAck announced <c>traceContext</c>.</summary>
    TraceContext = 2,

    /// <summary>Protocol version 2.</summary>
    Deadline = 4,

    /// <summary>The call id is in the server's own id space, so it never collides with the client's.</summary>
    ServerInitiated = 8,

    /// <summary>Only sent to a peer whose handshake announced <c>maxMetadataSize</c>: one that did not closes the
    /// connection on the flag.</summary>

    Metadata = 16,
}
