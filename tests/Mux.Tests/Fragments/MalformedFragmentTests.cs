using System.Net;
using System.Net.Sockets;
using Mux.Protocol;
using Mux.Serialization;
using Mux.Tests.Infrastructure;
using Mux.Tests.Protocol;
using static Mux.Tests.Protocol.ProtocolTestHelpers;

namespace Mux.Tests.Fragments;

/// <summary>Fragment sequences that break the rules close only their own connection, with a reason
/// that names the rule; a message over MaxMessageSize fails only its call.</summary>
public class MalformedFragmentTests
{
    private static readonly uint s_echo = MuxMethodId.Compute("Mux.Tests.Fragments.IBlobService.Echo");

    private static byte[] ResultMessage(byte[] data) => MessagePack.MessagePackSerializer.Serialize(data);

    public static TheoryData<string> BrokenResponseSequences => new()
    {
        "continuation for a call with no message in progress",
        "whole Error in the middle of a fragmented Response",
        "second first fragment for the same call",
        "fragments past the announced size",
        "last fragment short of the announced size",
    };

    [Theory]
    [MemberData(nameof(BrokenResponseSequences))]
    public async Task ABrokenFragmentSequenceFromTheServer_ClosesTheConnection_AndTheCallFailsWithAReasonThatNamesTheRule(string sequence)
    {
        await using RawServer server = await RawServer.StartAsync();
        Task<byte[]> call = server.Proxy.Echo([1, 2, 3]);
        ReceivedFrame request = await server.Peer.ExpectFrameAsync();
        uint id = request.CallId;
        byte[] result = ResultMessage(new byte[100]);

        (byte[] Bytes, string Reason) broken = sequence switch
        {
            "continuation for a call with no message in progress" => (
                FragmentWire.Continuation(id, [1, 2, 3], more: false),
                $"A Continuation frame arrived for call {id}, which has no fragmented message in progress"),
            "whole Error in the middle of a fragmented Response" => (
                Concat(
                    FragmentWire.First(FrameType.Response, id, (uint)result.Length, result[..50]),
                    WriteFrame(FrameType.Error, id, 0, new ErrorBody(MuxStatusCode.HandlerFailed, "x", null))),
                $"A Error frame for call {id} arrived while that call's fragmented Response was still arriving"),
            "second first fragment for the same call" => (
                Concat(
                    FragmentWire.First(FrameType.Response, id, (uint)result.Length, result[..50]),
                    FragmentWire.First(FrameType.Response, id, (uint)result.Length, result[..50])),
                $"Call {id} started a fragmented Response while its fragmented Response was still arriving"),
            "fragments past the announced size" => (
                Concat(
                    FragmentWire.First(FrameType.Response, id, (uint)result.Length, result[..50]),
                    FragmentWire.Continuation(id, result[50..], more: true),
                    FragmentWire.Continuation(id, [0], more: false)),
                $"The fragments of call {id}'s Response run past the {result.Length} bytes its first fragment announced"),
            _ => (
                Concat(
                    FragmentWire.First(FrameType.Response, id, (uint)result.Length, result[..50]),
                    FragmentWire.Continuation(id, result[50..^1], more: false)),
                $"The last fragment of call {id}'s Response arrived after {result.Length - 1} of the {result.Length} payload bytes"),
        };

        await server.Peer.SendAsync(broken.Bytes);

        var ex = await Assert.ThrowsAsync<MuxConnectionException>(() => call.WaitAsync(TestHost.Patience));
        Assert.Equal(MuxCloseReason.ProtocolError, ex.Reason);
        Assert.Contains(broken.Reason, ex.Message, StringComparison.Ordinal);
        await server.Peer.AssertClosedByOtherSideAsync();
    }

    [Theory]
    [InlineData(1016, 1)] // 4 (method id) + 1 (array) + 3 (bin 16) + 1016 = 1024: exactly the fragment size.
    [InlineData(1017, 2)] // One byte more: a first fragment of 1024 bytes and a Continuation of 1.
    [InlineData(0, 1)]
    [InlineData(3064, 3)] // 3072: three full fragments, the last one without MoreFragments.
    public async Task ARequestUpToTheFragmentSize_GoesInOneFrame_AndALargerOneInFragmentsOfAtMostThatSize(int size, int frames)
    {
        // No CallTimeout, so no deadline header: the message is exactly the method id and the arguments.
        await using RawServer server = await RawServer.StartAsync(new MuxClientOptions { FragmentSize = 1024, CallTimeout = Timeout.InfiniteTimeSpan });
        byte[] data = BlobService.Pattern(size);
        Task<byte[]> call = server.Proxy.Echo(data);

        var received = new List<ReceivedFrame> { await server.Peer.ExpectFrameAsync() };
        while ((received[^1].Flags & FrameFlags.MoreFragments) != 0)
        {
            received.Add(await server.Peer.ExpectFrameAsync());
        }

        Assert.Equal(frames, received.Count);
        uint id = received[0].CallId;
        Assert.Equal(FrameType.Request, received[0].Type);
        Assert.Equal(frames > 1 ? FrameFlags.MoreFragments : FrameFlags.None, received[0].Flags);
        Assert.All(received.Skip(1), f => Assert.Equal((FrameType.Continuation, id), (f.Type, f.CallId)));
        Assert.All(received.Skip(1).SkipLast(1), f => Assert.Equal(1024, f.Payload.Length));
        byte[] arguments = received.SelectMany(static f => f.Payload).ToArray();
        Assert.Equal(FragmentWire.BytesArgument(data), arguments);
        Assert.Equal(s_echo, received[0].MethodId);

        await server.Peer.SendAsync(WriteFrame(FrameType.Response, id, 0, new RawBody(ResultMessage(data))));
        Assert.Equal(data, await call.WaitAsync(TestHost.Patience));
    }

    [Fact]
    public async Task AResponseInFragments_WithAnEmptyContinuationInTheMiddle_IsReassembledForItsCall()
    {
        await using RawServer server = await RawServer.StartAsync();
        byte[] data = BlobService.Pattern(5000);
        Task<byte[]> call = server.Proxy.Echo([1]);
        uint id = (await server.Peer.ExpectFrameAsync()).CallId;
        byte[] result = ResultMessage(data);

        await server.Peer.SendAsync(Concat(
            FragmentWire.First(FrameType.Response, id, (uint)result.Length, result[..1000]),
            FragmentWire.Continuation(id, [], more: true),
            FragmentWire.Continuation(id, result[1000..3000], more: true),
            FragmentWire.Continuation(id, result[3000..], more: false)));

        Assert.Equal(data, await call.WaitAsync(TestHost.Patience));
        Assert.True(server.Client.IsConnected);
    }

    [Fact]
    public async Task AResponseOverTheClientsMaxMessageSize_FromAServerThatIgnoresIt_FailsOnlyThatCall_AndItsRestIsSkipped()
    {
        await using RawServer server = await RawServer.StartAsync(new MuxClientOptions { MaxMessageSize = 4096 });
        Task<byte[]> big = server.Proxy.Echo([1]);
        uint bigId = (await server.Peer.ExpectFrameAsync()).CallId;
        byte[] result = ResultMessage(new byte[10_000]);

        await server.Peer.SendAsync(FragmentWire.First(FrameType.Response, bigId, (uint)result.Length, result[..2000]));

        // The call fails as soon as the first fragment says how large the message is.
        var ex = await Assert.ThrowsAsync<MuxRemoteException>(() => big.WaitAsync(TestHost.Patience));
        Assert.Equal(MuxStatusCode.MessageTooLarge, ex.StatusCode);
        Assert.Contains($"is {result.Length} bytes, over this client's MaxMessageSize of 4096 bytes (4 KiB", ex.Message, StringComparison.Ordinal);

        // Its other fragments still arrive (interleaved with another call's answer) and are skipped.
        Task<byte[]> next = server.Proxy.Echo([2]);
        uint nextId = (await server.Peer.ExpectFrameAsync()).CallId;
        await server.Peer.SendAsync(Concat(
            FragmentWire.Continuation(bigId, result[2000..6000], more: true),
            WriteFrame(FrameType.Response, nextId, 0, new Mux.Tests.Protocol.RawBody(ResultMessage([7, 8, 9]))),
            FragmentWire.Continuation(bigId, result[6000..], more: false)));

        Assert.Equal([7, 8, 9], await next.WaitAsync(TestHost.Patience));
        Assert.True(server.Client.IsConnected);
    }

    [Fact]
    public async Task ARequestOverTheServersMaxMessageSize_FromAClientThatIgnoresIt_IsAnsweredWithMessageTooLarge_AndTheConnectionKeepsServing()
    {
        await using BlobHost host = await BlobHost.StartAsync(new MuxServerOptions { MaxMessageSize = 8192 });
        await using RawMuxPeer raw = await RawMuxPeer.ConnectAsync(host.Server.LocalEndPoint!);
        await raw.HandshakeAsync();
        byte[] message = FragmentWire.RequestMessage("Echo", FragmentWire.BytesArgument(new byte[20_000]));

        await raw.SendAsync(FragmentWire.First(FrameType.Request, 1, (uint)message.Length, message[..4000]));

        // Answered at once, before the rest has been sent.
        ReceivedFrame answer = await raw.ExpectFrameAsync();
        Assert.Equal((FrameType.Error, 1u), (answer.Type, answer.CallId));
        ErrorBody error = ErrorBody.Read(answer.Payload);
        Assert.Equal(MuxStatusCode.MessageTooLarge, error.Code);
        Assert.Contains($"IBlobService.Echo is {message.Length} bytes, over this server's MaxMessageSize of 8192 bytes (8 KiB", error.Message, StringComparison.Ordinal);

        await raw.SendAsync(Concat(
            FragmentWire.Continuation(1, message[4000..12000], more: true),
            WriteFrame(FrameType.Request, 2, MuxMethodId.Compute("Mux.Tests.Fragments.IBlobService.Add"), new Mux.Tests.Protocol.RawBody(MessagePack.MessagePackSerializer.Serialize((2, 3)))),
            FragmentWire.Continuation(1, message[12000..], more: false)));

        ReceivedFrame sum = await raw.ExpectFrameAsync();
        Assert.Equal((FrameType.Response, 2u), (sum.Type, sum.CallId));
        Assert.Equal(5, MessagePack.MessagePackSerializer.Deserialize<int>(sum.Payload));
        Assert.Equal(0, host.Service.Echoes);
        Assert.Equal(5, await host.Proxy.Add(2, 3).AsTask().WaitAsync(TestHost.Patience));
        Assert.Equal(2, host.Server.ActiveConnections);
    }

    public static TheoryData<string> BrokenRequestSequences => new()
    {
        "continuation for an unknown call",
        "whole Request in the middle of a fragmented Request",
        "fragmented Response from a client",
    };

    [Theory]
    [MemberData(nameof(BrokenRequestSequences))]
    public async Task ABrokenFragmentSequenceFromAClient_ClosesOnlyThatConnection(string sequence)
    {
        await using BlobHost host = await BlobHost.StartAsync();
        Assert.Equal(5, await host.Proxy.Add(2, 3).AsTask().WaitAsync(TestHost.Patience));
        await using RawMuxPeer raw = await RawMuxPeer.ConnectAsync(host.Server.LocalEndPoint!);
        await raw.HandshakeAsync();
        await Hosts.WaitUntilAsync(() => host.Server.ActiveConnections == 2, "the server to register the raw connection");
        byte[] message = FragmentWire.RequestMessage("Echo", FragmentWire.BytesArgument(new byte[3000]));

        byte[] bytes = sequence switch
        {
            "continuation for an unknown call" => FragmentWire.Continuation(5, message[..100], more: false),
            "whole Request in the middle of a fragmented Request" => Concat(
                FragmentWire.First(FrameType.Request, 5, (uint)message.Length, message[..1000]),
                WriteFrame(FrameType.Request, 5, s_echo, new Mux.Tests.Protocol.RawBody(FragmentWire.BytesArgument([1])))),
            _ => Concat(
                FragmentWire.First(FrameType.Response, 5, 3000, new byte[1000]),
                FragmentWire.Continuation(5, new byte[2000], more: false)),
        };
        await raw.SendAsync(bytes);

        await raw.AssertClosedByOtherSideAsync();
        await Hosts.WaitUntilAsync(() => host.Server.ActiveConnections == 1, "the server to drop the raw connection");
        Assert.Equal(0, host.Service.Echoes);
        Assert.Equal(5, await host.Proxy.Add(2, 3).AsTask().WaitAsync(TestHost.Patience));
    }

    [Fact]
    public async Task AFirstFragmentBeforeTheHandshake_ClosesTheConnectionAtOnce_InsteadOfBufferingTheMessage()
    {
        // No handshake timeout: only the fragment itself may close the connection. Before the fix it
        // was reassembled like any call's message, so a peer that never sent Hello (or whose Hello
        // was still being authenticated) could make the server hold MaxMessageSize per call it
        // might have, for as long as it liked.
        var log = new CapturedLog();
        await using BlobHost host = await BlobHost.StartAsync(new MuxServerOptions { HandshakeTimeout = Timeout.InfiniteTimeSpan, LoggerFactory = log });
        await using RawMuxPeer raw = await RawMuxPeer.ConnectAsync(host.Server.LocalEndPoint!);
        byte[] message = FragmentWire.RequestMessage("Echo", FragmentWire.BytesArgument(new byte[3000]));

        await raw.SendAsync(FragmentWire.First(FrameType.Request, 1, (uint)message.Length, message[..1000]));

        await raw.AssertClosedByOtherSideAsync();
        await Hosts.WaitUntilAsync(() => log.Entries.Any(static e => e.EventId.Id == 1 && e.Message.Contains(nameof(MuxCloseReason.ProtocolError), StringComparison.Ordinal)), "the server to log the protocol error");
        Assert.Equal(0, host.Service.Echoes);
        Assert.Equal(5, await host.Proxy.Add(2, 3).AsTask().WaitAsync(TestHost.Patience));
    }
}
