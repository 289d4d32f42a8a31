using System.Buffers;
using System.Net;
using System.Net.Sockets;
using Mux.Protocol;
using Mux.Tests.Infrastructure;
using Mux.Tests.Protocol;

namespace Mux.Tests.Callbacks;

/// <summary>The ServerInitiated flag (0x08) on the wire: which frames may carry it, and what each
/// side does with a frame that breaks the rules.</summary>
public class ServerInitiatedFrameTests
{
    [Theory]
    [InlineData((byte)FrameType.Request)]
    [InlineData((byte)FrameType.Response)]
    [InlineData((byte)FrameType.Error)]
    public void FrameReader_ReadsServerInitiated_OnRequestResponseAndError(byte typeByte)
    {
        var type = (FrameType)typeByte;
        var body = new RawBody([0x91, 0x05]);
        using var output = new PooledBufferWriter();
        FrameWriter.Write(output, type, 9, 0x1234, ref body, FrameFlags.ServerInitiated);
        var buffer = new ReadOnlySequence<byte>(output.WrittenSpan.ToArray());

        Assert.True(FrameReader.TryRead(ref buffer, 4096, out Frame frame));

        Assert.Equal(type, frame.Type);
        Assert.Equal(FrameFlags.ServerInitiated, frame.Flags);
        Assert.Equal(9u, frame.CallId);
        Assert.Equal(new byte[] { 0x91, 0x05 }, frame.Payload.ToArray());
        Assert.Equal(type == FrameType.Request ? 0x1234u : 0u, frame.MethodId);
    }

    [Fact]
    public void FrameReader_ReadsServerInitiated_OnCancel()
    {
        var output = new ArrayBufferWriter<byte>();
        FrameWriter.WriteRaw(output, FrameType.Cancel, 3, [], FrameFlags.ServerInitiated);
        var buffer = new ReadOnlySequence<byte>(output.WrittenMemory);

        Assert.True(FrameReader.TryRead(ref buffer, 4096, out Frame frame));

        Assert.Equal(FrameType.Cancel, frame.Type);
        Assert.Equal(FrameFlags.ServerInitiated, frame.Flags);
        Assert.Equal(3u, frame.CallId);
    }

    [Theory]
    [InlineData((byte)FrameType.Ping)]
    [InlineData((byte)FrameType.Pong)]
    [InlineData((byte)FrameType.GoAway)]
    public void FrameReader_RejectsServerInitiated_OnConnectionLevelFrames(byte typeByte)
    {
        var type = (FrameType)typeByte;
        byte[] payload = type == FrameType.GoAway ? new byte[ProtocolConstants.GoAwayPayloadSize] : new byte[ProtocolConstants.PingPayloadSize];
        var output = new ArrayBufferWriter<byte>();
        FrameWriter.WriteRaw(output, type, 0, payload, FrameFlags.ServerInitiated);
        var buffer = new ReadOnlySequence<byte>(output.WrittenMemory);

        var error = Assert.Throws<MuxProtocolException>(() => FrameReader.TryRead(ref buffer, 4096, out _));
        Assert.Contains("0x08", error.Message, StringComparison.Ordinal);
    }

    [Fact]
    public async Task AClientSendingARequestWithServerInitiated_IsDisconnectedForBreakingTheProtocol()
    {
        await using TestHost host = await TestHost.StartTcpAsync();
        await using RawMuxPeer raw = await RawMuxPeer.ConnectAsync(host.Server.LocalEndPoint!);
        await raw.HandshakeAsync();

        byte[] request = RawMuxPeer.AddRequest(1, 2, 3);
        request[5] = (byte)FrameFlags.ServerInitiated;
        await raw.SendAsync(request);

        await raw.AssertClosedByOtherSideAsync();
    }

    [Fact]
    public async Task AClientsAnswerToACallTheServerNoLongerWaitsFor_IsDropped_AndTheConnectionGoesOn()
    {
        await using TestHost host = await TestHost.StartTcpAsync();
        await using RawMuxPeer raw = await RawMuxPeer.ConnectAsync(host.Server.LocalEndPoint!);
        await raw.HandshakeAsync();

        // Like the late answer to a call to the client that timed out.
        await raw.SendAsync(Flagged(FrameType.Response, 77, 0, [0xc0]));
        await raw.SendAsync(RawMuxPeer.AddRequest(1, 2, 3));

        ReceivedFrame answer = await raw.ExpectFrameAsync();
        Assert.Equal(FrameType.Response, answer.Type);
        Assert.Equal(FrameFlags.None, answer.Flags);
        Assert.Equal(1u, answer.CallId);
        Assert.Equal(5, MessagePack.MessagePackSerializer.Deserialize<int>(answer.Payload));
    }

    [Fact]
    public async Task AServersRequestWithServerInitiated_IsAnsweredByTheClientWithTheSameIdAndFlag()
    {
        var listener = new TcpListener(IPAddress.Loopback, 0);
        listener.Start();
        try
        {
            Task<MuxClient> connecting = MuxClient.ConnectAsync(listener.LocalEndpoint, new MuxClientOptions { AutoReconnect = false });
            await using RawMuxPeer server = await RawMuxPeer.AcceptAsync(listener);
            await server.AnswerHelloAsync();
            await using MuxClient client = await connecting.WaitAsync(TestHost.Patience);
            client.AddService<IClientSide>(new ClientSide(4));

            // Id 1 is also the id of the client's first call: the flag keeps the two apart.
            uint transform = MuxMethodId.Compute("Mux.Tests.Callbacks.IClientSide.Transform");
            await server.SendAsync(Flagged(FrameType.Request, 1, transform, MessagePack.MessagePackSerializer.Serialize(new[] { 6 })));

            ReceivedFrame answer = await server.ExpectFrameAsync();
            Assert.Equal(FrameType.Response, answer.Type);
            Assert.Equal(FrameFlags.ServerInitiated, answer.Flags);
            Assert.Equal(1u, answer.CallId);
            Assert.Equal(6004, MessagePack.MessagePackSerializer.Deserialize<int>(answer.Payload));
        }
        finally
        {
            listener.Stop();
        }
    }

    [Fact]
    public async Task AnErrorFromTheClientThatCannotBeRead_FailsTheServersCall_WithoutSayingTheServerSentIt()
    {
        await using CallbackHost host = await CallbackHost.StartAsync(TransportKind.Tcp);
        await using RawMuxPeer client = await RawMuxPeer.ConnectAsync(host.Server.LocalEndPoint!);
        await client.HandshakeAsync();
        uint register = MuxMethodId.Compute("Mux.Tests.Callbacks.ICallbackHub.Register");
        await client.SendAsync(ProtocolTestHelpers.WriteFrame(FrameType.Request, 1, register, new RawBody([0x90])));
        Assert.Equal(FrameType.Response, (await client.ExpectFrameAsync()).Type);
        Assert.True(host.Hub.Registered.TryDequeue(out MuxRemoteClient? remote));

        Task<string> call = remote!.CreateProxy<IClientSide>().Fast("a").AsTask();
        ReceivedFrame request = await client.ExpectFrameAsync();
        await client.SendAsync(Flagged(FrameType.Error, request.CallId, 0, [0x91, 0x01])); // [1]: too few fields.

        var error = await Assert.ThrowsAsync<MuxRemoteException>(() => call.WaitAsync(TestHost.Patience));
        Assert.Equal(MuxStatusCode.ProtocolError, error.StatusCode);
        Assert.Equal("The peer sent an error with 1 fields; at least 2 are required.", error.Message);
    }

    /// <summary>A frame with ServerInitiated whose body is <paramref name="body"/>.</summary>
    private static byte[] Flagged(FrameType type, uint callId, uint methodId, byte[] body)
    {
        var raw = new RawBody(body);
        using var output = new PooledBufferWriter();
        FrameWriter.Write(output, type, callId, methodId, ref raw, FrameFlags.ServerInitiated);
        return output.WrittenSpan.ToArray();
    }
}
