using System.Buffers;

namespace Mux.Protocol;

/// <summary>
/// One parsed frame. <see cref="Payload"/> is a slice of the connection's receive buffer, valid only until the reader
/// loop advances past it, so anything that outlives the loop copies it.
/// </summary>
internal readonly struct Frame(
    FrameType type, FrameFlags flags, uint callId, uint methodId, ReadOnlySequence<byte> payload,
    ReadOnlySequence<byte> traceContext = default, uint remainingMilliseconds = 0, uint messageSize = 0, long payloadSize = 0)
{
    public FrameType Type { get; } = type;

    public FrameFlags Flags { get; } = flags;

    /// <summary>The call this frame belongs to; 0 for connection-level frames.</summary>
    public uint CallId { get; } = callId;

    /// <summary>The method id of a Request; 0 for every other type.</summary>
    public uint MethodId { get; } = methodId;

    /// <summary>What follows the type-specific header: MessagePack for Request, Response, Error, Hello and HelloAck
    /// (whose magic and version are left at its start), raw bytes otherwise.</summary>
    public ReadOnlySequence<byte> Payload { get; } = payload;

    /// <summary>A slice of the receive buffer like <see cref="Payload"/>.</summary>
    public ReadOnlySequence<byte> TraceContext { get; } = traceContext;

    public bool HasDeadline => (Flags & FrameFlags.Deadline) != 0;

    /// <summary>Whether a Request's body starts with the call's <see cref="MetadataSection"/>.</summary>
    public bool HasMetadata => (Flags & FrameFlags.Metadata) != 0;

    public uint RemainingMilliseconds { get; } = remainingMilliseconds;

    /// <summary>A first fragment's announced size of the whole message after the common header, less this field.</summary>
    public uint MessageSize { get; } = messageSize;

    /// <summary>A first fragment's <see cref="MessageSize"/> less the type-specific header it carried.</summary>

    public long PayloadSize { get; } = payloadSize;

    public bool IsFirstFragment => (Flags & FrameFlags.MoreFragments) != 0 && Type != FrameType.Continuation;
}
