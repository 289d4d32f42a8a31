using System.Buffers;
using Mux.Protocol;
using MessagePack;

namespace Mux.Tests.Protocol;

/// <summary>A frame body made of bytes that are already encoded (the frame reader does not look inside).</summary>
internal readonly struct RawBody(byte[] bytes) : IFrameBody
{
    private readonly byte[] _bytes = bytes;

    public void Write(ref MessagePackWriter writer) => writer.WriteRaw(_bytes);
}

/// <summary>A copy of a parsed frame that outlives the buffer it was read from.</summary>
internal sealed record ReceivedFrame(FrameType Type, FrameFlags Flags, uint CallId, uint MethodId, byte[] Payload, uint RemainingMilliseconds = 0)
{
    public static ReceivedFrame From(in Frame frame) =>
        new(frame.Type, frame.Flags, frame.CallId, frame.MethodId, frame.Payload.ToArray(), frame.RemainingMilliseconds);
}

internal static class ProtocolTestHelpers
{
    public static byte[] WriteFrame<TBody>(FrameType type, uint callId, uint methodId, TBody body)
        where TBody : struct, IFrameBody
    {
        using var output = new PooledBufferWriter();
        int size = FrameWriter.Write(output, type, callId, methodId, ref body);
        Assert.Equal(output.WrittenCount, size);
        return output.WrittenSpan.ToArray();
    }

    public static byte[] WriteRawFrame(FrameType type, uint callId, ReadOnlySpan<byte> body)
    {
        var output = new ArrayBufferWriter<byte>();
        int size = FrameWriter.WriteRaw(output, type, callId, body);
        Assert.Equal(output.WrittenCount, size);
        return output.WrittenSpan.ToArray();
    }

    public static byte[] WriteHelloFrame(FrameType type, in HandshakeSettings settings) =>
        WriteFrame(type, 0, 0, settings);

    /// <summary>The MessagePack encoding of a body on its own, as the payload a reader should see.</summary>
    public static byte[] EncodeBody<TBody>(TBody body)
        where TBody : struct, IFrameBody
    {
        var output = new ArrayBufferWriter<byte>();
        var writer = new MessagePackWriter(output);
        body.Write(ref writer);
        writer.Flush();
        return output.WrittenSpan.ToArray();
    }

    public static byte[] Concat(params byte[][] parts) => parts.SelectMany(static p => p).ToArray();
}
