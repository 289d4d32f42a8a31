using System.Buffers;
using System.Buffers.Binary;
using MessagePack;
using Mux.Protocol;
using Mux.Serialization;
using Mux.Tests.Callbacks;
using Mux.Tests.Infrastructure;
using Mux.Tests.Protocol;
using static Mux.Tests.Protocol.ProtocolTestHelpers;

namespace Mux.Tests.Fragments;

/// <summary>Fragments of calls from server to client on the wire: ServerInitiated (0x08) on the
/// first fragment and on every Continuation, and each id space reassembled on its own.</summary>
public class ServerInitiatedFragmentWireTests
{
    /// <summary>A Request's bytes after its common header: method id, then MessagePack arguments.</summary>
    private static byte[] RequestMessage(string method, object[] arguments)
    {
        byte[] body = MessagePackSerializer.Serialize(arguments);
        byte[] message = new byte[ProtocolConstants.RequestHeaderSize + body.Length];
        BinaryPrimitives.WriteUInt32LittleEndian(message, MuxMethodId.Compute(method));
        body.CopyTo(message, ProtocolConstants.RequestHeaderSize);
        return message;
    }

    private static byte[] ServerInitiatedCancel(uint callId)
    {
        byte[] cancel = FragmentWire.Whole(FrameType.Cancel, callId, []);
        cancel[5] = (byte)FrameFlags.ServerInitiated;
        return cancel;
    }

    [Fact]
    public void FrameReader_ReadsAContinuationWithServerInitiated_KeepingBothFlags()
    {
        var buffer = new ReadOnlySequence<byte>(FragmentWire.Continuation(7, [1, 2, 3], more: true, FrameFlags.ServerInitiated));

        Assert.True(FrameReader.TryRead(ref buffer, 4096, out Frame frame));

        Assert.Equal(FrameType.Continuation, frame.Type);
        Assert.Equal(FrameFlags.ServerInitiated | FrameFlags.MoreFragments, frame.Flags);
        Assert.Equal(7u, frame.CallId);
        Assert.Equal(new byte[] { 1, 2, 3 }, frame.Payload.ToArray());
        Assert.True(buffer.IsEmpty);
    }

    [Fact]
    public async Task ContinuationsWithServerInitiated_AreReassembledApartFromTheClientsOwnCallWithTheSameId()
    {
        await using RawServer server = await RawServer.StartAsync();
        var blobs = new ClientBlobs();
        server.Client.AddService<IClientBlobs>(blobs);
        byte[] clientData = BlobService.Pattern(5000);
        byte[] serverData = BlobService.Pattern(6000).Reverse().ToArray();
        Task<byte[]> call = server.Proxy.Echo([1]);
        uint id = (await server.Peer.ExpectFrameAsync()).CallId;
        byte[] result = MessagePackSerializer.Serialize(clientData);
        byte[] request = RequestMessage("Mux.Tests.Fragments.IClientBlobs.Echo", [serverData]);

        // The answer to the client's call and a call of the server's, same id, fragments interleaved.
        await server.Peer.SendAsync(Concat(
            FragmentWire.First(FrameType.Response, id, (uint)result.Length, result[..1000]),
            FragmentWire.First(FrameType.Request, id, (uint)request.Length, request[..1000], FrameFlags.ServerInitiated),
            FragmentWire.Continuation(id, request[1000..3000], more: true, FrameFlags.ServerInitiated),
            FragmentWire.Continuation(id, result[1000..], more: false),
            FragmentWire.Continuation(id, request[3000..], more: false, FrameFlags.ServerInitiated)));

        Assert.Equal(clientData, await call.WaitAsync(TestHost.Patience));
        ReceivedFrame answer = await server.Peer.ExpectFrameAsync();
        Assert.Equal((FrameType.Response, FrameFlags.ServerInitiated, id), (answer.Type, answer.Flags, answer.CallId));
        Assert.Equal(serverData, MessagePackSerializer.Deserialize<byte[]>(answer.Payload));
        Assert.Equal(1, blobs.Echoes);
        Assert.True(server.Client.IsConnected);
    }

    [Fact]
    public async Task AServersRequestOverTheClientsMaxMessageSize_IsAnsweredWithMessageTooLargeAndServerInitiated_NotRun_AndTheNextOneIs()
    {
        await using RawServer server = await RawServer.StartAsync(new MuxClientOptions { MaxMessageSize = 4096 });
        var blobs = new ClientBlobs();
        server.Client.AddService<IClientBlobs>(blobs);
        byte[] request = RequestMessage("Mux.Tests.Fragments.IClientBlobs.Echo", [new byte[10_000]]);

        await server.Peer.SendAsync(FragmentWire.First(FrameType.Request, 1, (uint)request.Length, request[..2000], FrameFlags.ServerInitiated));

        // Answered at once, before the rest has been sent.
        ReceivedFrame answer = await server.Peer.ExpectFrameAsync();
        Assert.Equal((FrameType.Error, FrameFlags.ServerInitiated, 1u), (answer.Type, answer.Flags, answer.CallId));
        ErrorBody error = ErrorBody.Read(answer.Payload);
        Assert.Equal(MuxStatusCode.MessageTooLarge, error.Code);
        Assert.Contains($"The server's call to IClientBlobs.Echo is {request.Length} bytes, over this client's MaxMessageSize of 4096 bytes (4 KiB, MuxClientOptions.MaxMessageSize); it was not run.", error.Message, StringComparison.Ordinal);

        // The rest is skipped, around a small call of the server's and with the client's own call 1 in flight.
        Task<int> sum = server.Proxy.Add(2, 3).AsTask();
        ReceivedFrame add = await server.Peer.ExpectFrameAsync();
        Assert.Equal((FrameType.Request, 1u), (add.Type, add.CallId));
        byte[] make = RequestMessage("Mux.Tests.Fragments.IClientBlobs.Make", [3]);
        await server.Peer.SendAsync(Concat(
            FragmentWire.Continuation(1, request[2000..6000], more: true, FrameFlags.ServerInitiated),
            FragmentWire.Whole(FrameType.Response, 1, MessagePackSerializer.Serialize(5)),
            Flagged(FragmentWire.Whole(FrameType.Request, 2, make)),
            FragmentWire.Continuation(1, request[6000..], more: false, FrameFlags.ServerInitiated)));

        Assert.Equal(5, await sum.WaitAsync(TestHost.Patience));
        ReceivedFrame made = await server.Peer.ExpectFrameAsync();
        Assert.Equal((FrameType.Response, FrameFlags.ServerInitiated, 2u), (made.Type, made.Flags, made.CallId));
        Assert.Equal(BlobService.Pattern(3), MessagePackSerializer.Deserialize<byte[]>(made.Payload));
        Assert.Equal(0, blobs.Echoes);
        Assert.True(server.Client.IsConnected);
    }

    [Fact]
    public async Task ACancelForAServersCallWhoseRequestIsStillArriving_IsAnsweredCanceledAtOnce_AndItsHandlerNeverRuns()
    {
        await using RawServer server = await RawServer.StartAsync();
        var side = new ClientSide(1);
        server.Client.AddService<IClientSide>(side);
        string tag = new('t', 3000);
        byte[] request = RequestMessage("Mux.Tests.Callbacks.IClientSide.Slow", [tag]);

        await server.Peer.SendAsync(Concat(
            FragmentWire.First(FrameType.Request, 4, (uint)request.Length, request[..1000], FrameFlags.ServerInitiated),
            ServerInitiatedCancel(4)));

        // Answered before the rest of the Request has been sent.
        ReceivedFrame answer = await server.Peer.ExpectFrameAsync();
        Assert.Equal((FrameType.Error, FrameFlags.ServerInitiated, 4u), (answer.Type, answer.Flags, answer.CallId));
        ErrorBody error = ErrorBody.Read(answer.Payload);
        Assert.Equal(MuxStatusCode.Canceled, error.Code);
        Assert.Equal("IClientSide.Slow was canceled before its request had arrived whole; it was not run.", error.Message);

        // The rest still arrives and is dropped; the next call of the server's runs.
        byte[] fast = RequestMessage("Mux.Tests.Callbacks.IClientSide.Fast", ["next"]);
        await server.Peer.SendAsync(Concat(
            FragmentWire.Continuation(4, request[1000..], more: false, FrameFlags.ServerInitiated),
            Flagged(FragmentWire.Whole(FrameType.Request, 5, fast))));
        ReceivedFrame next = await server.Peer.ExpectFrameAsync();
        Assert.Equal((FrameType.Response, FrameFlags.ServerInitiated, 5u), (next.Type, next.Flags, next.CallId));
        Assert.Equal("fast next from 1", MessagePackSerializer.Deserialize<string>(next.Payload));
        Assert.False(side.SlowStarted.Task.IsCompleted, "The handler of a call cancelled before its Request was whole ran.");
        Assert.Equal(0L, server.Client.Connection.Inbound.ReassemblyBytesRented);
        Assert.True(server.Client.IsConnected);
    }

    [Fact]
    public async Task AServersRequestInFragments_CarriesServerInitiatedOnItsFirstFragmentAndEveryContinuation()
    {
        await using TwoWayRawClient raw = await TwoWayRawClient.StartAsync(new MuxServerOptions { FragmentSize = 1024 });
        byte[] data = BlobService.Pattern(5000);

        Task<byte[]> call = raw.ClientProxy.Echo(data);
        var fragments = new List<ReceivedFrame> { await raw.Peer.ExpectFrameAsync() };
        while ((fragments[^1].Flags & FrameFlags.MoreFragments) != 0)
        {
            fragments.Add(await raw.Peer.ExpectFrameAsync());
        }

        Assert.Equal(5, fragments.Count); // The method id and 5,004 bytes of arguments, 1024 at a time.
        Assert.Equal((FrameType.Request, FrameFlags.ServerInitiated | FrameFlags.MoreFragments), (fragments[0].Type, fragments[0].Flags));
        Assert.All(fragments.Skip(1).SkipLast(1), f => Assert.Equal((FrameType.Continuation, FrameFlags.ServerInitiated | FrameFlags.MoreFragments), (f.Type, f.Flags)));
        Assert.Equal((FrameType.Continuation, FrameFlags.ServerInitiated), (fragments[^1].Type, fragments[^1].Flags));
        Assert.All(fragments, f => Assert.Equal(fragments[0].CallId, f.CallId));
        Assert.Equal(MessagePackSerializer.Serialize(new object[] { data }), fragments.SelectMany(static f => f.Payload).ToArray());

        // Answered in fragments too (the client is this test, so it may use any size it likes).
        byte[] result = MessagePackSerializer.Serialize(data);
        await raw.Peer.SendAsync(Concat(
            FragmentWire.First(FrameType.Response, fragments[0].CallId, (uint)result.Length, result[..3000], FrameFlags.ServerInitiated),
            FragmentWire.Continuation(fragments[0].CallId, result[3000..], more: false, FrameFlags.ServerInitiated)));
        Assert.Equal(data, await call.WaitAsync(TestHost.Patience));
    }

    [Fact]
    public async Task AClientsAnswerOverTheServersMaxMessageSize_FromAClientThatIgnoresIt_FailsThatCallWithMessageTooLarge_AndItsRestIsSkipped()
    {
        await using TwoWayRawClient raw = await TwoWayRawClient.StartAsync(new MuxServerOptions { MaxMessageSize = 8192 });
        Task<byte[]> call = raw.ClientProxy.Make(10);
        uint id = (await raw.Peer.ExpectFrameAsync()).CallId;
        byte[] result = MessagePackSerializer.Serialize(new byte[20_000]);

        await raw.Peer.SendAsync(FragmentWire.First(FrameType.Response, id, (uint)result.Length, result[..2000], FrameFlags.ServerInitiated));

        var ex = await Assert.ThrowsAsync<MuxRemoteException>(() => call.WaitAsync(TestHost.Patience));
        Assert.Equal(MuxStatusCode.MessageTooLarge, ex.StatusCode);
        Assert.Contains($"The client's response to IClientBlobs.Make is {result.Length} bytes, over this server's MaxMessageSize of 8192 bytes (8 KiB, MuxServerOptions.MaxMessageSize); it was skipped.", ex.Message, StringComparison.Ordinal);

        await raw.Peer.SendAsync(Concat(
            FragmentWire.Continuation(id, result[2000..9000], more: true, FrameFlags.ServerInitiated),
            WriteFrame(FrameType.Request, 2, MuxMethodId.Compute("Mux.Tests.Fragments.IBlobService.Add"), new RawBody(MessagePackSerializer.Serialize((2, 3)))),
            FragmentWire.Continuation(id, result[9000..], more: false, FrameFlags.ServerInitiated)));
        ReceivedFrame sum = await raw.Peer.ExpectFrameAsync();
        Assert.Equal((FrameType.Response, 2u), (sum.Type, sum.CallId));
        Assert.Equal(5, MessagePackSerializer.Deserialize<int>(sum.Payload));
        Assert.True(raw.Remote.IsConnected);
    }

    [Fact]
    public async Task AnswersInFragmentsThatNoCallWaitsFor_AreSkipped_UpToTheCallCap_BeyondWhichTheClientIsDisconnected()
    {
        await using TwoWayRawClient raw = await TwoWayRawClient.StartAsync(new MuxServerOptions { MaxConcurrentCallsPerConnection = 4 });
        byte[] result = MessagePackSerializer.Serialize(new byte[1_000_000]);

        // Like late answers to calls that timed out: skipped as they arrive, not buffered.
        for (uint id = 100; id < 104; id++)
        {
            await raw.Peer.SendAsync(FragmentWire.First(FrameType.Response, id, (uint)result.Length, result[..100], FrameFlags.ServerInitiated));
        }

        await raw.Peer.SendAsync(WriteFrame(FrameType.Request, 2, MuxMethodId.Compute("Mux.Tests.Fragments.IBlobService.Add"), new RawBody(MessagePackSerializer.Serialize((2, 3)))));
        ReceivedFrame sum = await raw.Peer.ExpectFrameAsync();
        Assert.Equal((FrameType.Response, 2u), (sum.Type, sum.CallId));

        // A fifth at once is more than a client may have outstanding.
        await raw.Peer.SendAsync(FragmentWire.First(FrameType.Response, 104, (uint)result.Length, result[..100], FrameFlags.ServerInitiated));
        await raw.Peer.AssertClosedByOtherSideAsync();
        Assert.False(raw.Remote.IsConnected);
    }

    /// <summary>The frame with ServerInitiated set.</summary>
    private static byte[] Flagged(byte[] frame)
    {
        frame[5] |= (byte)FrameFlags.ServerInitiated;
        return frame;
    }
}
