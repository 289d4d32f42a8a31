using System.Buffers.Binary;
using MessagePack;
using Mux.Protocol;
using Mux.Tests.Protocol;
using static Mux.Tests.Protocol.ProtocolTestHelpers;

namespace Mux.Tests.Infrastructure;

/// <summary>What a hand-written server (a <see cref="RawMuxPeer"/> a real client connected to)
/// sends and reads, for tests that drive a client through its calls' edges one frame at a time.</summary>
internal static class RawServerFrames
{
    /// <summary>A HelloAck that lets the client have <paramref name="maxConcurrentCalls"/> calls at once.</summary>
    public static byte[] HelloAck(int maxConcurrentCalls = int.MaxValue) =>
        WriteHelloFrame(FrameType.HelloAck, new HandshakeSettings(ProtocolConstants.Version, 4 * 1024 * 1024, maxConcurrentCalls, null));

    /// <summary>The Response to call <paramref name="callId"/> of a method that returns an int.</summary>
    public static byte[] Response(uint callId, int value) =>
        WriteRawFrame(FrameType.Response, callId, MessagePackSerializer.Serialize(value));

    /// <summary>GoAway: the server serves the calls up to <paramref name="lastServedCallId"/> and no other.</summary>
    public static byte[] GoAway(uint lastServedCallId)
    {
        byte[] body = new byte[ProtocolConstants.GoAwayPayloadSize];
        BinaryPrimitives.WriteUInt32LittleEndian(body, lastServedCallId);
        return WriteRawFrame(FrameType.GoAway, 0, body);
    }

    /// <summary>The first argument of an <see cref="ITestService.Add"/> Request, which the tests use
    /// to tell their calls apart on the wire.</summary>
    public static int FirstArgument(ReceivedFrame request)
    {
        Assert.Equal(FrameType.Request, request.Type);
        return MessagePackSerializer.Deserialize<int[]>(request.Payload)[0];
    }
}
