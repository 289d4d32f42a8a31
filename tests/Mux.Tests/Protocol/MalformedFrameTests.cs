using System.Buffers.Binary;
using System.IO.Pipelines;
using Microsoft.Extensions.Logging;
using Mux.Client;
using Mux.Protocol;
using Mux.Server;
using Mux.Tests.Fragments;
using Mux.Tests.Infrastructure;
using static Mux.Tests.Protocol.ProtocolTestHelpers;

namespace Mux.Tests.Protocol;

/// <summary>
/// Every kind of malformed frame, one table per direction, sent over in-memory pipes by a peer
/// written by hand: each one closes its own connection only, as a protocol error whose message
/// names what was wrong; the calls in flight on it end (a served call's token fires, a caller's
/// call fails), no pooled buffer stays rented, and another connection of the same server serves on.
/// </summary>
public class MalformedFrameTests
{
    private static readonly uint s_waitForCancellation = MuxMethodId.Compute("Mux.Tests.Infrastructure.ITestService.WaitForCancellation");

    /// <summary>A frame whose every header field the test chooses: the length prefix (the real
    /// length of what follows when null), type, flags and call id, then <paramref name="rest"/>.</summary>
    private static byte[] Frame(byte type, byte flags, uint callId, byte[] rest, uint? length = null)
    {
        byte[] frame = new byte[ProtocolConstants.FrameHeaderSize + rest.Length];
        BinaryPrimitives.WriteUInt32LittleEndian(frame, length ?? (uint)(frame.Length - ProtocolConstants.LengthPrefixSize));
        frame[4] = type;
        frame[5] = flags;
        BinaryPrimitives.WriteUInt32LittleEndian(frame.AsSpan(6), callId);
        rest.CopyTo(frame, ProtocolConstants.FrameHeaderSize);
        return frame;
    }

    private static byte[] Frame(FrameType type, FrameFlags flags, uint callId, byte[] rest) => Frame((byte)type, (byte)flags, callId, rest);

    private static byte[] U32(uint value)
    {
        byte[] bytes = new byte[4];
        BinaryPrimitives.WriteUInt32LittleEndian(bytes, value);
        return bytes;
    }

    /// <summary>A Request's method id and arguments (Add(2, 3)).</summary>
    private static byte[] AddMessage() => [.. U32(TestServiceIds.Add), 0x92, 0x02, 0x03];

    /// <summary>What a client may send that breaks the protocol, and the words the server's
    /// protocol error must contain. Call 1 (WaitForCancellation) is running when it arrives.</summary>
    private static readonly Dictionary<string, (Func<byte[]> Bytes, string Reason)> s_fromClient = new()
    {
        ["length shorter than the common header"] = (() => Frame(3, 0, 2, [], length: 5), "Frame length 5 is smaller than the 6-byte frame header"),
        ["length 0"] = (() => Frame(3, 0, 2, [], length: 0), "Frame length 0 is smaller than"),
        ["length over the server's MaxFrameSize"] = (() => Frame(3, 0, 2, [], length: 4 * 1024 * 1024 + 1), "exceeds the maximum frame size of 4194304 bytes"),
        ["length 2^32-1"] = (() => Frame(3, 0, 2, [], length: uint.MaxValue), "Frame length 4294967295 exceeds"),
        ["unknown frame type 0"] = (() => Frame(0, 0, 2, []), "Unknown frame type 0"),
        ["unknown frame type 13, between two known ones"] = (() => Frame(13, 0, 2, []), "Unknown frame type 13"),
        ["unknown frame type 255"] = (() => Frame(255, 0, 2, [1, 2, 3]), "Unknown frame type 255"),
        ["Hello after the handshake"] = (() => WriteHelloFrame(FrameType.Hello, new HandshakeSettings(ProtocolConstants.Version, 4096, 10, null)), "does not accept Hello frames after the handshake"),
        ["HelloAck from a client"] = (() => WriteHelloFrame(FrameType.HelloAck, new HandshakeSettings(ProtocolConstants.Version, 4096, 10, null)), "does not accept HelloAck frames after the handshake"),
        ["reserved flag bit 5"] = (() => Frame(3, 0x20, 2, AddMessage()), "Frame flags 0x20 are not supported"),
        ["reserved flag bit 7"] = (() => Frame(3, 0x80, 2, AddMessage()), "Frame flags 0x80 are not supported"),
        ["TraceContext on a Cancel"] = (() => Frame(FrameType.Cancel, FrameFlags.TraceContext, 1, []), "Frame flags 0x02 are not supported by protocol version 2 on a Cancel frame"),
        ["Deadline on a Ping"] = (() => Frame(FrameType.Ping, FrameFlags.Deadline, 0, new byte[8]), "Frame flags 0x04 are not supported by protocol version 2 on a Ping frame"),
        ["Metadata on a StreamItem"] = (() => Frame(FrameType.StreamItem, FrameFlags.Metadata, 1, [0xc0]), "Frame flags 0x10 are not supported by protocol version 2 on a StreamItem frame"),
        ["Request shorter than its method id"] = (() => Frame(FrameType.Request, FrameFlags.None, 2, [1, 2, 3]), "A Request frame needs a method id (4 bytes); 3 bytes are left of its body"),
        ["Request whose Deadline flag has no deadline"] = (() => Frame(FrameType.Request, FrameFlags.Deadline, 2, U32(TestServiceIds.Add)), "A Request frame needs the deadline its Deadline flag announces (4 bytes); 0 bytes are left"),
        ["Request whose trace context runs past the frame"] = (() => Frame(FrameType.Request, FrameFlags.TraceContext, 2, [.. U32(TestServiceIds.Add), 55, 0x30]), "trace-context header runs past the end of the frame"),
        ["Request whose trace context has no tracestate length"] = (() => Frame(FrameType.Request, FrameFlags.TraceContext, 2, [.. U32(TestServiceIds.Add), 0, 0]), "trace-context header runs past the end of the frame"),
        ["Request with ServerInitiated"] = (() => Frame(FrameType.Request, FrameFlags.ServerInitiated, 2, AddMessage()), "sent a Request frame with ServerInitiated (0x08)"),
        ["Request reusing the id of a running call"] = (() => Frame(FrameType.Request, FrameFlags.None, 1, AddMessage()), "reused call id 1 while that call was still running"),
        ["Request with call id 0"] = (() => Frame(FrameType.Request, FrameFlags.None, 0, AddMessage()), "A Request frame belongs to a call; it carries call id 0"),
        ["Cancel with a body"] = (() => Frame(FrameType.Cancel, FrameFlags.None, 1, [0]), "A Cancel frame must carry exactly 0 bytes after its header; it carries 1"),
        ["Cancel with call id 0"] = (() => Frame(FrameType.Cancel, FrameFlags.None, 0, []), "A Cancel frame belongs to a call; it carries call id 0"),
        ["Cancel with ServerInitiated"] = (() => Frame(FrameType.Cancel, FrameFlags.ServerInitiated, 1, []), "sent a Cancel frame with ServerInitiated (0x08)"),
        ["Ping of 7 bytes"] = (() => Frame(FrameType.Ping, FrameFlags.None, 0, new byte[7]), "A Ping frame must carry exactly 8 bytes after its header; it carries 7"),
        ["Ping of 9 bytes"] = (() => Frame(FrameType.Ping, FrameFlags.None, 0, new byte[9]), "A Ping frame must carry exactly 8 bytes after its header; it carries 9"),
        ["Pong of 0 bytes"] = (() => Frame(FrameType.Pong, FrameFlags.None, 0, []), "A Pong frame must carry exactly 8 bytes after its header; it carries 0"),
        ["GoAway of 3 bytes"] = (() => Frame(FrameType.GoAway, FrameFlags.None, 0, [1, 2, 3]), "A GoAway frame must carry exactly 4 bytes after its header; it carries 3"),
        ["Error with call id 0 from a client"] = (() => WriteFrame(FrameType.Error, 0, 0, new ErrorBody(MuxStatusCode.HandlerFailed, "x", null)), "A server does not accept Error frames with call id 0 after the handshake"),
        ["Response without ServerInitiated from a client"] = (() => Frame(FrameType.Response, FrameFlags.None, 1, [0xc0]), "sent a Response frame without ServerInitiated (0x08)"),
        ["Response with call id 0"] = (() => Frame(FrameType.Response, FrameFlags.ServerInitiated, 0, [0xc0]), "A Response frame belongs to a call; it carries call id 0"),
        ["StreamItem with call id 0"] = (() => Frame(FrameType.StreamItem, FrameFlags.None, 0, [0xc0]), "A StreamItem frame belongs to a call; it carries call id 0"),
        ["StreamEnd with call id 0"] = (() => Frame(FrameType.StreamEnd, FrameFlags.None, 0, []), "A StreamEnd frame belongs to a call; it carries call id 0"),
        ["StreamEnd with ServerInitiated"] = (() => Frame(FrameType.StreamEnd, FrameFlags.ServerInitiated, 1, []), "sent a StreamEnd frame with ServerInitiated (0x08)"),
        ["StreamCredit of 3 bytes"] = (() => Frame(FrameType.StreamCredit, FrameFlags.None, 1, [1, 0, 0]), "A StreamCredit frame must carry exactly 4 bytes after its header; it carries 3"),
        ["StreamCredit with call id 0"] = (() => Frame(FrameType.StreamCredit, FrameFlags.None, 0, U32(1)), "A StreamCredit frame belongs to a call; it carries call id 0"),
        ["MoreFragments on a Cancel"] = (() => Frame(FrameType.Cancel, FrameFlags.MoreFragments, 1, []), "A Cancel frame for call 1 has flag MoreFragments (0x01)"),
        ["MoreFragments on a Ping"] = (() => Frame(FrameType.Ping, FrameFlags.MoreFragments, 1, new byte[8]), "A Ping frame for call 1 has flag MoreFragments (0x01)"),
        ["first fragment with call id 0"] = (() => FragmentWire.First(FrameType.Request, 0, 5000, AddMessage()), "A Request frame for call 0 has flag MoreFragments (0x01)"),
        ["first fragment without its message size"] = (() => Frame(FrameType.Request, FrameFlags.MoreFragments, 2, [1, 2]), "A Request frame needs the size of its whole message, as a first fragment (4 bytes); 2 bytes are left"),
        ["first fragment as large as its whole message"] = (() => FragmentWire.First(FrameType.Request, 2, 7, AddMessage()), "announces a message of 7 bytes but itself carries 7"),
        ["Request in fragments reusing the id of a running call"] = (() => InFragments(1, EchoMessage(3000)), "reused call id 1 while that call was still running"),
        ["Continuation for no message"] = (() => FragmentWire.Continuation(2, [1, 2, 3], more: false), "A Continuation frame arrived for call 2, which has no fragmented message in progress"),
        ["Continuation past the announced size"] = (() => Concat(FragmentWire.First(FrameType.Request, 2, 12, AddMessage()), FragmentWire.Continuation(2, new byte[6], more: false)), "The fragments of call 2's Request run past the 12 bytes its first fragment announced"),
        ["last fragment short of the announced size"] = (() => Concat(FragmentWire.First(FrameType.Request, 2, 12, AddMessage()), FragmentWire.Continuation(2, new byte[3], more: false)), "The last fragment of call 2's Request arrived after 6 of the 8 payload bytes"),
        ["second first fragment for one call"] = (() => Concat(FragmentWire.First(FrameType.Request, 2, 5000, AddMessage()), FragmentWire.First(FrameType.Request, 2, 5000, AddMessage())), "Call 2 started a fragmented Request while its fragmented Request was still arriving"),
        ["whole Request in the middle of the call's fragments"] = (() => Concat(FragmentWire.First(FrameType.Request, 2, 5000, AddMessage()), Frame(FrameType.Request, FrameFlags.None, 2, AddMessage())), "A Request frame for call 2 arrived while that call's fragmented Request was still arriving"),
        ["fragmented Response without ServerInitiated from a client"] = (() => FragmentWire.First(FrameType.Response, 2, 5000, [0xc0]), "sent a Response frame without ServerInitiated (0x08)"),
        ["the stream ends inside a frame"] = (() => Frame(FrameType.Request, FrameFlags.None, 2, AddMessage())[..12], "The connection ended in the middle of a frame (12 bytes of it arrived)"),
    };

    /// <summary>A Request's method id and arguments: Echo of <paramref name="length"/> characters,
    /// more than a call copies (so it takes over the pooled segments of a message in fragments).</summary>
    private static byte[] EchoMessage(int length) => [.. U32(TestServiceIds.Echo), .. MessagePack.MessagePackSerializer.Serialize(new object[] { new string('x', length) })];

    /// <summary>A Request message in two fragments: the first 1,000 bytes, then the rest.</summary>
    private static byte[] InFragments(uint callId, byte[] message) =>
        Concat(FragmentWire.First(FrameType.Request, callId, (uint)message.Length, message[..1000]), FragmentWire.Continuation(callId, message[1000..], more: false));

    public static TheoryData<string> FromClient => new(s_fromClient.Keys);

    [Theory]
    [MemberData(nameof(FromClient))]
    public async Task AMalformedFrameFromAClient_ClosesOnlyItsConnection_AsAProtocolErrorThatSaysWhatWasWrong(string malformation)
    {
        (Func<byte[]> bytes, string reason) = s_fromClient[malformation];
        var log = new CloseLog();
        await using TestHost host = await TestHost.StartInMemoryAsync(new MuxServerOptions { LoggerFactory = log });
        (PipePeer peer, PipeWriter toServer, ServerConnection connection) = await ConnectRawPeerAsync(host);
        await peer.SendAsync(Frame(FrameType.Request, FrameFlags.None, 1, U32(s_waitForCancellation).Append((byte)0x90).ToArray()));
        await host.Service.WaitStarted.Task.WaitAsync(TestHost.Patience);

        byte[] malformed = bytes();
        await peer.SendAsync(malformed);
        if (malformation == "the stream ends inside a frame")
        {
            await toServer.CompleteAsync();
        }

        (MuxCloseReason closeReason, Exception error) = await log.Closed.Task.WaitAsync(TestHost.Patience);
        Assert.Equal(MuxCloseReason.ProtocolError, closeReason);
        var protocolError = Assert.IsType<MuxProtocolException>(error);
        Assert.Contains(reason, protocolError.Message, StringComparison.Ordinal);
        await host.Service.CancellationObserved.Task.WaitAsync(TestHost.Patience);
        await Hosts.WaitUntilAsync(() => connection.Inbound.ReassemblyBytesRented == 0, "the closed connection to give back every pooled segment");
        await Hosts.WaitUntilAsync(() => host.Server.ActiveConnections == 1, "the server to drop the broken connection");
        Assert.Equal(5, await host.Proxy.Add(2, 3).AsTask().WaitAsync(TestHost.Patience));
    }

    /// <summary>What a server may send that breaks the protocol, and the words the client's
    /// protocol error must contain. The client's call (Echo) is waiting for its answer.</summary>
    private static readonly Dictionary<string, (Func<uint, byte[]> Bytes, string Reason)> s_fromServer = new()
    {
        ["length shorter than the common header"] = (_ => Frame(4, 0, 1, [], length: 3), "Frame length 3 is smaller than the 6-byte frame header"),
        ["length over the client's MaxFrameSize"] = (_ => Frame(4, 0, 1, [], length: 64 * 1024 * 1024 + 1), "exceeds the maximum frame size"),
        ["unknown frame type"] = (id => Frame(0xee, 0, id, [0xc0]), "Unknown frame type 238"),
        ["a second HelloAck"] = (_ => FragmentWire.PlainHelloAck(), "does not accept HelloAck frames after the handshake"),
        ["Hello from a server"] = (_ => WriteHelloFrame(FrameType.Hello, new HandshakeSettings(ProtocolConstants.Version, 4096, 10, null)), "does not accept Hello frames after the handshake"),
        ["reserved flag bit 6 on a Response"] = (id => Frame(4, 0x40, id, [0xc0]), "Frame flags 0x40 are not supported"),
        ["TraceContext on a Response"] = (id => Frame(FrameType.Response, FrameFlags.TraceContext, id, [0xc0]), "Frame flags 0x02 are not supported by protocol version 2 on a Response frame"),
        ["Response with ServerInitiated"] = (id => Frame(FrameType.Response, FrameFlags.ServerInitiated, id, [0xc0]), "sent a Response frame with ServerInitiated (0x08)"),
        ["Response with call id 0"] = (_ => Frame(FrameType.Response, FrameFlags.None, 0, [0xc0]), "A Response frame belongs to a call; it carries call id 0"),
        ["Request without ServerInitiated"] = (id => Frame(FrameType.Request, FrameFlags.None, id, AddMessage()), "sent a Request frame without ServerInitiated (0x08)"),
        ["Request from a server with call id 0"] = (_ => Frame(FrameType.Request, FrameFlags.ServerInitiated, 0, AddMessage()), "A Request frame belongs to a call; it carries call id 0"),
        ["Cancel of 4 bytes"] = (id => Frame(FrameType.Cancel, FrameFlags.ServerInitiated, id, [1, 2, 3, 4]), "A Cancel frame must carry exactly 0 bytes after its header; it carries 4"),
        ["Ping of 0 bytes"] = (_ => Frame(FrameType.Ping, FrameFlags.None, 0, []), "A Ping frame must carry exactly 8 bytes after its header; it carries 0"),
        ["GoAway of 5 bytes"] = (_ => Frame(FrameType.GoAway, FrameFlags.None, 0, new byte[5]), "A GoAway frame must carry exactly 4 bytes after its header; it carries 5"),
        ["StreamCredit of 0 bytes"] = (id => Frame(FrameType.StreamCredit, FrameFlags.None, id, []), "A StreamCredit frame must carry exactly 4 bytes after its header; it carries 0"),
        ["StreamEnd from a server"] = (id => Frame(FrameType.StreamEnd, FrameFlags.None, id, []), "sent a StreamEnd frame without ServerInitiated (0x08)"),
        ["Continuation for no message"] = (id => FragmentWire.Continuation(id, [1], more: false), $"which has no fragmented message in progress"),
        ["first fragment of a Response as large as its message"] = (id => FragmentWire.First(FrameType.Response, id, 3, [0xa2, 0x61, 0x62]), "announces a message of 3 bytes but itself carries 3"),
        ["fragments past the announced size"] = (id => Concat(FragmentWire.First(FrameType.Response, id, 6, [0xa5, 0x61]), FragmentWire.Continuation(id, [0x62, 0x63, 0x64, 0x65, 0x66], more: false)), "run past the 6 bytes its first fragment announced"),
        ["the stream ends inside a frame"] = (id => Frame(FrameType.Response, FrameFlags.None, id, [0xa1, 0x61])[..9], "The connection ended in the middle of a frame (9 bytes of it arrived)"),
    };

    public static TheoryData<string> FromServer => new(s_fromServer.Keys);

    [Theory]
    [MemberData(nameof(FromServer))]
    public async Task AMalformedFrameFromAServer_ClosesTheConnection_AndFailsTheWaitingCall_WithAProtocolErrorThatSaysWhatWasWrong(string malformation)
    {
        (Func<uint, byte[]> bytes, string reason) = s_fromServer[malformation];
        (PipePeer peer, PipeWriter toClient, MuxClient connected) = await ConnectRawServerAsync();
        await using MuxClient client = connected;
        ClientConnection connection = client.Connection;
        Task<string> call = client.CreateProxy<ITestService>().Echo("waiting");
        ReceivedFrame request = await peer.ExpectFrameAsync();

        await peer.SendAsync(bytes(request.CallId));
        if (malformation == "the stream ends inside a frame")
        {
            await toClient.CompleteAsync();
        }

        var ex = await Assert.ThrowsAsync<MuxConnectionException>(() => call.WaitAsync(TestHost.Patience));
        Assert.Equal(MuxCloseReason.ProtocolError, ex.Reason);
        Assert.Contains(reason, ex.Message, StringComparison.Ordinal);
        Assert.Equal(0, client.PendingCalls);
        await Hosts.WaitUntilAsync(() => connection.Inbound.ReassemblyBytesRented == 0, "the closed connection to give back every pooled segment");
    }

    /// <summary>Requests whose body is wrong for their call alone, and the status and words of the
    /// Error that answers each: the connection serves on.</summary>
    private static readonly Dictionary<string, (byte[] Request, MuxStatusCode Code, string Reason)> s_badRequests = new()
    {
        ["unknown method id"] = (Frame(FrameType.Request, FrameFlags.None, 2, [.. U32(0xdeadbeef), 0x90]), MuxStatusCode.UnknownMethod, "0xdeadbeef"),
        ["arguments that are no MessagePack"] = (Frame(FrameType.Request, FrameFlags.None, 2, [.. U32(TestServiceIds.Add), 0xc1]), MuxStatusCode.InvalidArguments, "The arguments of ITestService.Add could not be read"),
        ["no arguments at all"] = (Frame(FrameType.Request, FrameFlags.None, 2, U32(TestServiceIds.Add)), MuxStatusCode.InvalidArguments, "The arguments of ITestService.Add could not be read"),
        ["arguments cut short"] = (Frame(FrameType.Request, FrameFlags.None, 2, [.. U32(TestServiceIds.Add), 0x92, 0x02]), MuxStatusCode.InvalidArguments, "The arguments of ITestService.Add could not be read"),
        ["an argument of the wrong type"] = (Frame(FrameType.Request, FrameFlags.None, 2, [.. U32(TestServiceIds.Add), 0x92, 0xa1, 0x61, 0x03]), MuxStatusCode.InvalidArguments, "The arguments of ITestService.Add could not be read"),
        ["one argument too many"] = (Frame(FrameType.Request, FrameFlags.None, 2, [.. U32(TestServiceIds.Add), 0x93, 0x02, 0x03, 0x04]), MuxStatusCode.InvalidArguments, "takes 2 argument(s) but the request carries 3"),
        ["an argument list announcing 2^32-1 elements"] = (Frame(FrameType.Request, FrameFlags.None, 2, [.. U32(TestServiceIds.Add), 0xdd, 0xff, 0xff, 0xff, 0xff, 0x02]), MuxStatusCode.InvalidArguments, "The arguments of ITestService.Add could not be read"),
        ["a string announcing 2^32-1 bytes"] = (Frame(FrameType.Request, FrameFlags.None, 2, [.. U32(TestServiceIds.Echo), 0x91, 0xdb, 0xff, 0xff, 0xff, 0xff, 0x61]), MuxStatusCode.InvalidArguments, "The arguments of ITestService.Echo could not be read"),
        ["a metadata section that runs past the body"] = (Frame(FrameType.Request, FrameFlags.Metadata, 2, [.. U32(TestServiceIds.Add), .. U32(100), 0x80]), MuxStatusCode.InvalidArguments, "The metadata of the call to ITestService.Add could not be read"),
        ["a metadata section of fewer than 4 bytes"] = (Frame(FrameType.Request, FrameFlags.Metadata, 2, [.. U32(TestServiceIds.Add), 0x01]), MuxStatusCode.InvalidArguments, "The metadata of the call to ITestService.Add could not be read"),
        ["a metadata section over the server's limit"] = (Frame(FrameType.Request, FrameFlags.Metadata, 2, [.. U32(TestServiceIds.Add), .. U32(uint.MaxValue), 0x80]), MuxStatusCode.MessageTooLarge, "over this server's MaxMetadataSize"),
        ["a deadline already passed"] = (Frame(FrameType.Request, FrameFlags.Deadline, 2, [.. U32(TestServiceIds.Add), .. U32(0), 0x92, 0x02, 0x03]), MuxStatusCode.DeadlineExceeded, "ITestService.Add"),
        ["arguments in fragments that are no MessagePack"] = (InFragments(2, [.. U32(TestServiceIds.Echo), 0x91, 0xda, 0x0f, 0xa0, .. new byte[3000], 0xc1]), MuxStatusCode.InvalidArguments, "The arguments of ITestService.Echo could not be read"),
    };

    public static TheoryData<string> BadRequests => new(s_badRequests.Keys);

    [Theory]
    [MemberData(nameof(BadRequests))]
    public async Task ARequestWhoseBodyIsWrong_FailsThatCallAlone_AndTheConnectionServesOn(string malformation)
    {
        (byte[] request, MuxStatusCode code, string reason) = s_badRequests[malformation];
        await using TestHost host = await TestHost.StartInMemoryAsync();
        (PipePeer peer, PipeWriter toServer, ServerConnection connection) = await ConnectRawPeerAsync(host);

        await peer.SendAsync(request);

        ReceivedFrame answer = await peer.ExpectFrameAsync();
        Assert.Equal((FrameType.Error, 2u), (answer.Type, answer.CallId));
        ErrorBody error = ErrorBody.Read(answer.Payload);
        Assert.Equal(code, error.Code);
        Assert.Contains(reason, error.Message, StringComparison.Ordinal);
        await peer.SendAsync(Frame(FrameType.Request, FrameFlags.None, 3, AddMessage()));
        ReceivedFrame sum = await peer.ExpectFrameAsync();
        Assert.Equal((FrameType.Response, 3u), (sum.Type, sum.CallId));
        Assert.Equal([0x05], sum.Payload);
        Assert.Equal(0L, connection.Inbound.ReassemblyBytesRented);
        Assert.Equal(2, host.Server.ActiveConnections);
        await toServer.CompleteAsync(); // The peer leaves, so that the server stops at once.
    }

    /// <summary>Answers whose body is wrong for their call alone, and what that call fails with.</summary>
    private static readonly Dictionary<string, (Func<uint, byte[]> Answer, Type Exception, string Reason)> s_badAnswers = new()
    {
        ["a Response that is no MessagePack"] = (id => Frame(FrameType.Response, FrameFlags.None, id, [0xc1]), typeof(MessagePack.MessagePackSerializationException), "The response to ITestService.Echo could not be read as String"),
        ["a Response of the wrong type"] = (id => Frame(FrameType.Response, FrameFlags.None, id, [0x05]), typeof(MessagePack.MessagePackSerializationException), "could not be read as String"),
        ["a Response cut short"] = (id => Frame(FrameType.Response, FrameFlags.None, id, [0xa5, 0x61]), typeof(MessagePack.MessagePackSerializationException), "could not be read as String"),
        ["an empty Response"] = (id => Frame(FrameType.Response, FrameFlags.None, id, []), typeof(MessagePack.MessagePackSerializationException), "could not be read as String"),
        ["a Response announcing a string of 2^32-1 bytes"] = (id => Frame(FrameType.Response, FrameFlags.None, id, [0xdb, 0xff, 0xff, 0xff, 0xff, 0x61]), typeof(MessagePack.MessagePackSerializationException), "could not be read as String"),
        ["a Response in fragments that is no MessagePack"] = (id => Concat(FragmentWire.First(FrameType.Response, id, 3000, [0xc1, .. new byte[999]]), FragmentWire.Continuation(id, new byte[2000], more: false)), typeof(MessagePack.MessagePackSerializationException), "could not be read as String"),
        ["an Error that is no MessagePack"] = (id => Frame(FrameType.Error, FrameFlags.None, id, [0xc1]), typeof(MuxRemoteException), "The peer sent an error that could not be read"),
        ["an Error of one field"] = (id => Frame(FrameType.Error, FrameFlags.None, id, [0x91, 0x01]), typeof(MuxRemoteException), "The peer sent an error with 1 fields; at least 2 are required"),
        ["an Error whose code is not an int"] = (id => Frame(FrameType.Error, FrameFlags.None, id, [0x92, 0xa1, 0x61, 0xa1, 0x62]), typeof(MuxRemoteException), "The peer sent an error that could not be read"),
    };

    public static TheoryData<string> BadAnswers => new(s_badAnswers.Keys);

    [Theory]
    [MemberData(nameof(BadAnswers))]
    public async Task AnAnswerWhoseBodyIsWrong_FailsThatCallAlone_AndTheConnectionServesOn(string malformation)
    {
        (Func<uint, byte[]> answer, Type exception, string reason) = s_badAnswers[malformation];
        (PipePeer peer, PipeWriter toClient, MuxClient connected) = await ConnectRawServerAsync();
        await using MuxClient client = connected;
        ITestService proxy = client.CreateProxy<ITestService>();
        Task<string> call = proxy.Echo("first");
        uint id = (await peer.ExpectFrameAsync()).CallId;

        await peer.SendAsync(answer(id));

        Exception ex = await Assert.ThrowsAnyAsync<Exception>(() => call.WaitAsync(TestHost.Patience));
        Assert.IsType(exception, ex);
        Assert.Contains(reason, ex.Message, StringComparison.Ordinal);
        if (ex is MuxRemoteException remote)
        {
            Assert.Equal(MuxStatusCode.ProtocolError, remote.StatusCode);
        }

        Task<string> next = proxy.Echo("second");
        uint nextId = (await peer.ExpectFrameAsync()).CallId;
        await peer.SendAsync(Frame(FrameType.Response, FrameFlags.None, nextId, [0xa2, 0x6f, 0x6b]));
        Assert.Equal("ok", await next.WaitAsync(TestHost.Patience));
        Assert.True(client.IsConnected);
        await Hosts.WaitUntilAsync(() => client.Connection.Inbound.ReassemblyBytesRented == 0, "the call to give back the segments of its answer");
    }

    /// <summary>A raw peer over in-memory pipes, its handshake done, the writer of what it sends (to
    /// end its stream) and the server's connection to it.</summary>
    private static async Task<(PipePeer Peer, PipeWriter ToServer, ServerConnection Connection)> ConnectRawPeerAsync(TestHost host)
    {
        var existing = new HashSet<ServerConnection>(host.Server.Connections);
        var toServer = new Pipe();
        var toClient = new Pipe();
        host.Server.Accept(new Duplex(toServer.Reader, toClient.Writer));
        var peer = new PipePeer(new Duplex(toClient.Reader, toServer.Writer));
        await peer.SendAsync(WriteHelloFrame(FrameType.Hello, new HandshakeSettings(ProtocolConstants.Version, 4 * 1024 * 1024, 1000, null)));
        Assert.Equal(FrameType.HelloAck, (await peer.ExpectFrameAsync()).Type);
        ServerConnection connection = Assert.Single(host.Server.Connections, c => !existing.Contains(c));
        return (peer, toServer.Writer, connection);
    }

    /// <summary>A client connected over in-memory pipes to a raw server peer that answered its Hello,
    /// and the writer of what the peer sends (to end its stream).</summary>
    private static async Task<(PipePeer Peer, PipeWriter ToClient, MuxClient Client)> ConnectRawServerAsync()
    {
        var toServer = new Pipe();
        var toClient = new Pipe();
        var peer = new PipePeer(new Duplex(toServer.Reader, toClient.Writer));
        Task<MuxClient> connecting = MuxClient.ConnectAsync(new Duplex(toClient.Reader, toServer.Writer), new MuxClientOptions { CallTimeout = Timeout.InfiniteTimeSpan });
        Assert.Equal(FrameType.Hello, (await peer.ExpectFrameAsync()).Type);
        await peer.SendAsync(FragmentWire.PlainHelloAck());
        return (peer, toClient.Writer, await connecting.WaitAsync(TestHost.Patience));
    }

    /// <summary>A pipe pair seen from one end.</summary>
    private sealed record Duplex(PipeReader Input, PipeWriter Output) : IDuplexPipe;

    /// <summary>Keeps how the first connection that closed with an error closed (event 1, ConnectionClosed).</summary>
    private sealed class CloseLog : LogHook
    {
        public TaskCompletionSource<(MuxCloseReason Reason, Exception Error)> Closed { get; } = new(TaskCreationOptions.RunContinuationsAsynchronously);

        public override void Log<TState>(LogLevel logLevel, EventId eventId, TState state, Exception? exception, Func<TState, Exception?, string> formatter)
        {
            if (eventId.Id == 1 && exception is not null && state is IReadOnlyList<KeyValuePair<string, object?>> values)
            {
                foreach (KeyValuePair<string, object?> value in values)
                {
                    if (value.Key == "Reason" && value.Value is MuxCloseReason reason)
                    {
                        Closed.TrySetResult((reason, exception));
                    }
                }
            }
        }
    }
}
