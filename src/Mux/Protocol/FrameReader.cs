using System.Buffers;
using System.Buffers.Binary;
using System.Diagnostics.CodeAnalysis;
using System.Runtime.CompilerServices;

namespace Mux.Protocol;

/// <summary>
/// Splits frames off the front of a receive buffer. Pure: no state, no I/O, no allocation.
/// </summary>
internal static class FrameReader
{
    private const FrameFlags RequestFlags = FrameFlags.TraceContext | FrameFlags.Deadline | FrameFlags.Metadata;

    /// <summary>The payload is a slice of the buffer, not a copy. On a partial frame nothing is consumed.</summary>
    /// <exception cref="MuxProtocolException">The bytes cannot be a valid frame. The length prefix is checked against
    /// <paramref name="maxFrameSize"/> before the rest of the frame is awaited, so a hostile length is never buffered.</exception>
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

        // The fixed-size headers are copied only when they straddle segments.
        const int MaxHeaderSize = ProtocolConstants.FrameHeaderSize + ProtocolConstants.FragmentTotalSize +
            ProtocolConstants.RequestHeaderSize + DeadlineHeader.Size;
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
            ThrowProtocol(
                $"Frame flags 0x{(byte)flags:x2} are not supported by protocol version {ProtocolConstants.Version} on a {type} frame " +
                "(a Request may carry TraceContext, 0x02, Deadline, 0x04, and Metadata, 0x10; the frames of a call, Request, Response, " +
                "Error, Cancel, Continuation, StreamItem, StreamEnd and StreamCredit, may carry ServerInitiated, 0x08).");
        }

        // A first fragment announces the size of its whole message before its type-specific header.
        uint messageSize = 0;
        int offset = ProtocolConstants.FrameHeaderSize;
        if ((flags & FrameFlags.MoreFragments) != 0)
        {
            if (type is not (FrameType.Request or FrameType.Response or FrameType.Error or FrameType.Continuation) || callId == 0)
            {
                ThrowProtocol(
                    $"A {type} frame for call {callId} has flag MoreFragments (0x01); " +
                    "only a call's Request, Response, Error and Continuation frames may be fragmented.");
            }

            if (type != FrameType.Continuation)
            {
                messageSize = TakeUInt32(header, ref offset, ref body, type, "the size of its whole message, as a first fragment");
            }
        }

        long fragmentBytes = body.Length;
        uint methodId = 0;
        uint remainingMilliseconds = 0;
        ReadOnlySequence<byte> traceContext = default;
        switch (type)
        {
            case FrameType.Request:
                RequireCallId(type, callId);
                methodId = TakeUInt32(header, ref offset, ref body, type, "a method id");

                // The headers come in this order: deadline, then trace context (docs/protocol.md).
                if ((flags & FrameFlags.Deadline) != 0)
                {
                    remainingMilliseconds = TakeUInt32(header, ref offset, ref body, type, "the deadline its Deadline flag announces");
                }

                if ((flags & FrameFlags.TraceContext) != 0 && !TraceContextHeader.TrySplit(ref body, out traceContext))
                {
                    ThrowProtocol("A Request frame's trace-context header runs past the end of the frame.");
                }

                // A metadata section stays at the start of the body: the call reads it on its worker thread, not this
                // loop, and it may run on into a Continuation when the Request is in fragments.

                break;
            case FrameType.Hello:
            case FrameType.HelloAck:
                if (body.Length < ProtocolConstants.HelloHeaderSize)
                {
                    ThrowTooShort(type, body.Length, ProtocolConstants.HelloHeaderSize, "magic and version");
                }

                break;
            case FrameType.Response:
                RequireCallId(type, callId);
                break;
            case FrameType.Error:
                break; // Call id 0: the peer refuses or closes the connection.
            case FrameType.Cancel:
                RequireCallId(type, callId);
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
                ThrowProtocol(
                    $"The first fragment of a {type} for call {callId} announces a message of {messageSize} bytes but itself carries " +
                    $"{fragmentBytes}; a fragmented message must be larger than its first fragment.");
            }
        }

        frame = new Frame(type, flags, callId, methodId, body, traceContext, remainingMilliseconds, messageSize, payloadSize);
        buffer = buffer.Slice(total);
        return true;
    }

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

    /// <summary>Takes a u32 off <paramref name="body"/>, read from <paramref name="header"/> rather than the sequence.</summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private static uint TakeUInt32(ReadOnlySpan<byte> header, ref int offset, ref ReadOnlySequence<byte> body, FrameType type, string what)
    {
        if (body.Length < sizeof(uint))
        {
            ThrowTooShort(type, body.Length, sizeof(uint), what);
        }

        uint value = BinaryPrimitives.ReadUInt32LittleEndian(header[offset..]);
        offset += sizeof(uint);
        body = body.Slice(sizeof(uint));
        return value;
    }

    [DoesNotReturn]
    private static void ThrowTooShort(FrameType type, long length, int size, string what) =>
        ThrowProtocol($"A {type} frame needs {what} ({size} bytes); {length} bytes are left of its body.");

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

    /// <summary><paramref name="buffer"/> holds at least 4 bytes, maybe across segments.</summary>

    internal static uint ReadUInt32(in ReadOnlySequence<byte> buffer)
    {
        Span<byte> bytes = stackalloc byte[4];
        buffer.Slice(0, 4).CopyTo(bytes);
        return BinaryPrimitives.ReadUInt32LittleEndian(bytes);
    }

    [DoesNotReturn]
    private static void ThrowProtocol(string message) => throw new MuxProtocolException(message);
}
