namespace Mux.Protocol;

/// <summary>Per-frame flag bits. Version 1 defines one, <see cref="TraceContext"/>, sent only to
/// peers that announce it in the handshake; the byte also leaves room for chunking ("more
/// fragments follow") without changing the frame layout.</summary>
[Flags]
internal enum FrameFlags : byte
{
    None = 0,

    /// <summary>Reserved for chunked payloads: more fragments of this call follow. Rejected in version 1.</summary>
    MoreFragments = 1,

    /// <summary>A Request carries the caller's W3C trace context between its method id and its
    /// arguments (see Mux.Diagnostics.TraceContextHeader). Only sent to a server whose HelloAck
    /// announced <c>traceContext</c>.</summary>
    TraceContext = 2,

    /// <summary>A Request carries the caller's remaining time, in milliseconds, straight after its
    /// method id (see <see cref="DeadlineHeader"/>). Version 2.</summary>
    Deadline = 4,
}
