using System.Buffers;
using System.Buffers.Binary;
using System.Diagnostics.CodeAnalysis;

namespace Mux.Protocol;

/// <summary>
/// Splits frames off the front of a receive buffer. Pure: no state, no I/O, no allocation.
/// </summary>
internal static class FrameReader
{
    // The headers a Request may announce (see AllowedFlags for the flags of every type).
    private const FrameFlags RequestFlags = FrameFlags.TraceContext | FrameFlags.Deadline | FrameFlags.Metadata;

    /// <summary>
    /// Reads one complete frame from the start of <paramref name="buffer"/>. On success the buffer
    /// is advanced past the frame and the frame's payload is a slice of it (no copy). On a partial
    /// frame nothing is consumed and <see langword="false"/> is returned.
    /// </summary>
    /// <param name="buffer">The unread bytes; advanced past the frame on success.</param>
    /// <param name="maxFrameSize">The largest value of the length prefix this side accepts.</param>
    /// <param name="frame">The frame read.</param>
    /// <exception cref="MuxProtocolException">The bytes cannot be a valid frame. The length is
    /// checked against <paramref name="maxFrameSize"/> before waiting for the rest of the frame, so
    /// a hostile length never makes us buffer it.</exception>
    public static bool TryRead(ref ReadOnlySequence<byte> buffer, int maxFrameSize, out Frame frame)
    {
        frame = default;
        if (buffer.Length < ProtocolConstants.FrameHeaderSize)
        {
            // Even a partial header can carry an oversized length: reject it as early as we can see it.
            if (buffer.Length >= ProtocolConstants.LengthPrefixSize)
            {
                CheckLength(ReadUInt32(buffer), maxFrameSize);
            }

            return false;
        }

        // Read the fixed header, plus a first fragment's total size and a Request's method id when
        // present, straight from the first segment when it holds them (the usual case); copy only
        // when they straddle segments.
        const int MaxHeaderSize = ProtocolConstants.FrameHeaderSize + ProtocolConstants.FragmentTotalSize + ProtocolConstants.RequestHeaderSize;
        Span<byte> copy = stackalloc byte[MaxHeaderSize];
        scoped ReadOnlySpan<byte> header = buffer.FirstSpan;
        if (header.Length < MaxHeaderSize && header.Length < buffer.Length)
        {
            int available = (int)Math.Min(buffer.Length, MaxHeaderSize);
            buffer.Slice(0, available).CopyTo(copy);
            header = copy[..available];
        }

        uint length = BinaryPrimitives.ReadUInt32LittleEndian(header);
        CheckLength(length, maxFrameSize);

        long total = ProtocolConstants.LengthPrefixSize + (long)length;
        if (buffer.Length < total)
        {
            return false;
        }

        var type = (FrameType)header[4];
        var flags = (FrameFlags)header[5];
        uint callId = BinaryPrimitives.ReadUInt32LittleEndian(header[6..]);
        ReadOnlySequence<byte> body = buffer.Slice(ProtocolConstants.FrameHeaderSize, length - ProtocolConstants.CommonHeaderSize);

        FrameFlags typeFlags = flags & ~FrameFlags.MoreFragments;
        if (typeFlags != FrameFlags.None && (typeFlags & ~AllowedFlags(type)) != 0)
        {
            ThrowProtocol($"Frame flags 0x{(byte)flags:x2} are not supported by protocol version {ProtocolConstants.Version} on a {type} frame (a Request may carry TraceContext, 0x02, Deadline, 0x04, and Metadata, 0x10; the frames of a call, Request, Response, Error, Cancel, Continuation, StreamItem, StreamEnd and StreamCredit, may carry ServerInitiated, 0x08).");
        }

        // A first fragment announces the size of its whole message before its type-specific header.
        uint messageSize = 0;
        int typeHeaderOffset = ProtocolConstants.FrameHeaderSize;
        if ((flags & FrameFlags.MoreFragments) != 0)
        {
            if (type is not (FrameType.Request or FrameType.Response or FrameType.Error or FrameType.Continuation) || callId == 0)
            {
                ThrowProtocol($"A {type} frame for call {callId} has flag MoreFragments (0x01); only a call's Request, Response, Error and Continuation frames may be fragmented.");
            }

            if (type != FrameType.Continuation)
            {
                if (body.Length < ProtocolConstants.FragmentTotalSize)
                {
                    ThrowProtocol($"The first fragment of a {type} needs a {ProtocolConstants.FragmentTotalSize}-byte message size; its body is {body.Length} bytes.");
                }

                messageSize = BinaryPrimitives.ReadUInt32LittleEndian(header[ProtocolConstants.FrameHeaderSize..]);
                body = body.Slice(ProtocolConstants.FragmentTotalSize);
                typeHeaderOffset += ProtocolConstants.FragmentTotalSize;
            }
        }

        long fragmentBytes = body.Length;
        uint methodId = 0;
        uint remainingMilliseconds = 0;
        ReadOnlySequence<byte> traceContext = default;
        switch (type)
        {
            case FrameType.Request:
                if (body.Length < ProtocolConstants.RequestHeaderSize)
                {
                    ThrowProtocol($"A Request frame needs a {ProtocolConstants.RequestHeaderSize}-byte method id; its body is {body.Length} bytes.");
                }

                methodId = BinaryPrimitives.ReadUInt32LittleEndian(header[typeHeaderOffset..]);
                body = body.Slice(ProtocolConstants.RequestHeaderSize);
                // The headers come in this order: deadline, then trace context (docs/protocol.md).
                if ((flags & FrameFlags.Deadline) != 0 && !DeadlineHeader.TrySplit(ref body, out remainingMilliseconds))
                {
                    ThrowProtocol($"A Request frame with the Deadline flag needs a {DeadlineHeader.Size}-byte deadline after its method id; {body.Length} bytes follow the method id.");
                }

                if ((flags & FrameFlags.TraceContext) != 0 && !TraceContextHeader.TrySplit(ref body, out traceContext))
                {
                    ThrowProtocol("A Request frame's trace-context header runs past the end of the frame.");
                }

                // A Metadata section (FrameFlags.Metadata) stays at the start of the body: the call
                // reads it on its worker thread (MetadataSection), not this loop, and it may run on
                // into a Continuation when the Request is in fragments.

                break;
            case FrameType.Hello:
            case FrameType.HelloAck:
                if (body.Length < ProtocolConstants.HelloHeaderSize)
                {
                    ThrowProtocol($"A {type} frame needs magic and version ({ProtocolConstants.HelloHeaderSize} bytes); its body is {body.Length} bytes.");
                }

                break;
            case FrameType.Response:
            case FrameType.Error:
                break;
            case FrameType.Cancel:
                RequireBodyLength(type, body, 0);
                break;
            case FrameType.Ping:
            case FrameType.Pong:
                RequireBodyLength(type, body, ProtocolConstants.PingPayloadSize);
                break;
            case FrameType.GoAway:
                RequireBodyLength(type, body, ProtocolConstants.GoAwayPayloadSize);
                break;
            case FrameType.Continuation:
            case FrameType.StreamItem:
            case FrameType.StreamEnd:
                RequireCallId(type, callId);
                break;
            case FrameType.StreamCredit:
                RequireCallId(type, callId);
                RequireBodyLength(type, body, ProtocolConstants.StreamCreditPayloadSize);
                break;
            default:
                ThrowProtocol($"Unknown frame type {(byte)type}.");
                break;
        }

        long payloadSize = 0;
        if ((flags & FrameFlags.MoreFragments) != 0 && type != FrameType.Continuation)
        {
            // The payload of the whole message: what is left of it once this fragment's header is read.
            payloadSize = messageSize - (fragmentBytes - body.Length);
            if (messageSize <= fragmentBytes)
            {
                ThrowProtocol($"The first fragment of a {type} for call {callId} announces a message of {messageSize} bytes but itself carries {fragmentBytes}; a fragmented message must be larger than its first fragment.");
            }
        }

        frame = new Frame(type, flags, callId, methodId, body, traceContext, remainingMilliseconds, messageSize, payloadSize);
        buffer = buffer.Slice(total);
        return true;
    }

    /// <summary>The flags a frame of this type may carry.</summary>
    private static FrameFlags AllowedFlags(FrameType type) => type switch
    {
        FrameType.Request => RequestFlags | FrameFlags.ServerInitiated,
        FrameType.Response or FrameType.Error or FrameType.Cancel or FrameType.Continuation
            or FrameType.StreamItem or FrameType.StreamEnd or FrameType.StreamCredit => FrameFlags.ServerInitiated,
        _ => FrameFlags.None,
    };

    private static void CheckLength(uint length, int maxFrameSize)
    {
        if (length < ProtocolConstants.CommonHeaderSize)
        {
            ThrowProtocol($"Frame length {length} is smaller than the {ProtocolConstants.CommonHeaderSize}-byte frame header.");
        }

        if (length > (uint)maxFrameSize)
        {
            ThrowProtocol($"Frame length {length} exceeds the maximum frame size of {maxFrameSize} bytes.");
        }
    }

    private static void RequireBodyLength(FrameType type, ReadOnlySequence<byte> body, int expected)
    {
        if (body.Length != expected)
        {
            ThrowProtocol($"A {type} frame must carry exactly {expected} bytes after its header; it carries {body.Length}.");
        }
    }

    private static void RequireCallId(FrameType type, uint callId)
    {
        if (callId == 0)
        {
            ThrowProtocol($"A {type} frame belongs to a call; it carries call id 0.");
        }
    }

    /// <summary>The little-endian u32 at the start of <paramref name="buffer"/> (at least 4 bytes,
    /// maybe across segments): the length prefix, the Request headers and metadata size that are
    /// one, and the body of a GoAway or StreamCredit (whose length ReadFrame checked).</summary>
    internal static uint ReadUInt32(in ReadOnlySequence<byte> buffer)
    {
        Span<byte> bytes = stackalloc byte[4];
        buffer.Slice(0, 4).CopyTo(bytes);
        return BinaryPrimitives.ReadUInt32LittleEndian(bytes);
    }

    [DoesNotReturn]
    private static void ThrowProtocol(string message) => throw new MuxProtocolException(message);
}
