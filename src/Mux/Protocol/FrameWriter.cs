using System.Buffers;
using System.Buffers.Binary;
using System.Diagnostics;
using MessagePack;

namespace Mux.Protocol;

/// <summary>
/// The length prefix is patched in by offset after the body: the buffer may be reallocated, or moved into segments,
/// while the body grows, so no span of the header is held across it.
/// </summary>
internal static class FrameWriter
{
    /// <summary>Returns the frame's size on the wire.</summary>
    public static int Write<TBody>(
        PooledBufferWriter output, FrameType type, uint callId, uint methodId, ref TBody body, FrameFlags flags = FrameFlags.None)
        where TBody : struct, IFrameBody
    {
        int headerSize = HeaderSize(type);
        int start = output.WrittenCount;
        output.GetSpan(headerSize);
        output.Advance(headerSize);

        var writer = new MessagePackWriter(output);
        body.Write(ref writer);
        writer.Flush();

        long frameSize = output.WrittenCount - start;
        WriteHeader(output.Buffer.AsSpan(start, headerSize), type, callId, methodId, frameSize, flags);
        return (int)frameSize;
    }

    /// <summary>For a frame that may be a large message: <paramref name="output"/> moves into segments as it grows.</summary>
    public static long Write<TBody>(
        MessageBufferWriter output, FrameType type, uint callId, uint methodId, ref TBody body, FrameFlags flags = FrameFlags.None)
        where TBody : struct, IFrameBody
    {
        Debug.Assert(output.WrittenCount == 0, "A frame starts its writer.");
        int headerSize = HeaderSize(type);
        output.GetSpan(headerSize);
        output.Advance(headerSize);

        // A large binary may be spliced in rather than copied (BinaryInPieces): the fragments read its memory in place.
        var writer = new MessagePackWriter(output);
        using (output.BeginSplicing())
        {
            body.Write(ref writer);
            writer.Flush();
        }

        long frameSize = output.WrittenCount;
        WriteHeader(output.FirstBytes(headerSize), type, callId, methodId, frameSize, flags);
        return frameSize;
    }

    public
 static int WriteRaw(IBufferWriter<byte> output, FrameType type, uint callId, ReadOnlySpan<byte> body, FrameFlags flags = FrameFlags.None)
    {
        int frameSize = ProtocolConstants.FrameHeaderSize + body.Length;
        Span<byte> span = output.GetSpan(frameSize);
        WriteHeader(span, type, callId, frameSize, flags);
        body.CopyTo(span[ProtocolConstants.FrameHeaderSize..]);
        output.Advance(frameSize);
        return frameSize;
    }

    private static int HeaderSize(FrameType type) =>
        ProtocolConstants.FrameHeaderSize + (type == FrameType.Request ? ProtocolConstants.RequestHeaderSize : 0);

    private static void WriteHeader(Span<byte> header, FrameType type, uint callId, uint methodId, long frameSize, FrameFlags flags)
    {
        if (frameSize > int.MaxValue)
        {
            throw new InvalidOperationException($"A frame of {frameSize} bytes cannot be sent.");
        }

        WriteHeader(header, type, callId, (int)frameSize, flags);
        if (type == FrameType.Request)
        {
            BinaryPrimitives.WriteUInt32LittleEndian(header[ProtocolConstants.FrameHeaderSize..], methodId);
        }
    }

    private static void WriteHeader(Span<byte> header, FrameType type, uint callId, int frameSize, FrameFlags flags)
    {
        // The length prefix counts the bytes after itself.
        BinaryPrimitives.WriteUInt32LittleEndian(header, (uint)(frameSize - ProtocolConstants.LengthPrefixSize));
        header[4] = (byte)type;
        header[5] = (byte)flags;
        BinaryPrimitives.WriteUInt32LittleEndian(header[6..], callId);
    }
}
