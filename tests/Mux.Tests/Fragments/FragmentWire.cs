using System.Buffers;
using System.Buffers.Binary;
using MessagePack;
using Mux.Protocol;

namespace Mux.Tests.Fragments;

/// <summary>Fragments assembled by hand, so that tests can send sequences a Mux endpoint never would.</summary>
internal static class FragmentWire
{
    /// <summary>A first fragment: the message's type and flags plus MoreFragments, its total size,
    /// then <paramref name="bytes"/> (its type-specific header and the start of its body).</summary>
    public static byte[] First(FrameType type, uint callId, uint messageSize, byte[] bytes, FrameFlags flags = FrameFlags.None)
    {
        byte[] frame = new byte[ProtocolConstants.FrameHeaderSize + ProtocolConstants.FragmentTotalSize + bytes.Length];
        BinaryPrimitives.WriteUInt32LittleEndian(frame, (uint)(frame.Length - ProtocolConstants.LengthPrefixSize));
        frame[4] = (byte)type;
        frame[5] = (byte)(flags | FrameFlags.MoreFragments);
        BinaryPrimitives.WriteUInt32LittleEndian(frame.AsSpan(6), callId);
        BinaryPrimitives.WriteUInt32LittleEndian(frame.AsSpan(ProtocolConstants.FrameHeaderSize), messageSize);
        bytes.CopyTo(frame, ProtocolConstants.FrameHeaderSize + ProtocolConstants.FragmentTotalSize);
        return frame;
    }

    /// <summary>A Continuation: MoreFragments unless it is the last, plus <paramref name="flags"/>
    /// (ServerInitiated for a call the server started).</summary>
    public static byte[] Continuation(uint callId, byte[] bytes, bool more, FrameFlags flags = FrameFlags.None)
    {
        byte[] frame = new byte[ProtocolConstants.FrameHeaderSize + bytes.Length];
        BinaryPrimitives.WriteUInt32LittleEndian(frame, (uint)(frame.Length - ProtocolConstants.LengthPrefixSize));
        frame[4] = (byte)FrameType.Continuation;
        frame[5] = (byte)((more ? FrameFlags.MoreFragments : FrameFlags.None) | flags);
        BinaryPrimitives.WriteUInt32LittleEndian(frame.AsSpan(6), callId);
        bytes.CopyTo(frame, ProtocolConstants.FrameHeaderSize);
        return frame;
    }

    /// <summary>A whole frame (no fragments) of the given type with raw bytes after the common header.</summary>
    public static byte[] Whole(FrameType type, uint callId, byte[] bytes)
    {
        byte[] frame = new byte[ProtocolConstants.FrameHeaderSize + bytes.Length];
        BinaryPrimitives.WriteUInt32LittleEndian(frame, (uint)(frame.Length - ProtocolConstants.LengthPrefixSize));
        frame[4] = (byte)type;
        BinaryPrimitives.WriteUInt32LittleEndian(frame.AsSpan(6), callId);
        bytes.CopyTo(frame, ProtocolConstants.FrameHeaderSize);
        return frame;
    }

    /// <summary>The bytes of a Request after its common header: method id, then the MessagePack arguments.</summary>
    public static byte[] RequestMessage(string method, byte[] arguments)
    {
        byte[] message = new byte[ProtocolConstants.RequestHeaderSize + arguments.Length];
        BinaryPrimitives.WriteUInt32LittleEndian(message, MuxMethodId.Compute("Mux.Tests.Fragments.IBlobService." + method));
        arguments.CopyTo(message, ProtocolConstants.RequestHeaderSize);
        return message;
    }

    /// <summary>MessagePack of one byte array as an argument list.</summary>
    public static byte[] BytesArgument(byte[] data) => MessagePackSerializer.Serialize(new object[] { data });

    /// <summary>A HelloAck that does not announce traceContext, so the client never adds a
    /// trace-context header and message sizes are exactly what a test computes.</summary>
    public static byte[] PlainHelloAck(int maxFrameSize = 4 * 1024 * 1024)
    {
        var output = new ArrayBufferWriter<byte>();
        var writer = new MessagePackWriter(output);
        Span<byte> prefix = writer.GetSpan(ProtocolConstants.HelloHeaderSize);
        BinaryPrimitives.WriteUInt32LittleEndian(prefix, ProtocolConstants.Magic);
        BinaryPrimitives.WriteUInt16LittleEndian(prefix[4..], ProtocolConstants.Version);
        writer.Advance(ProtocolConstants.HelloHeaderSize);
        writer.WriteMapHeader(2);
        writer.Write("maxFrameSize");
        writer.Write(maxFrameSize);
        writer.Write("maxConcurrentCalls");
        writer.Write(1000);
        writer.Flush();
        return Whole(FrameType.HelloAck, 0, output.WrittenSpan.ToArray());
    }
}
