using System.Buffers.Binary;
using Mux.Protocol;
using Mux.Tests.Infrastructure;
using Mux.Tests.Protocol;
using static Mux.Tests.Protocol.ProtocolTestHelpers;

namespace Mux.Tests.Callbacks;

/// <summary>GoAway from a client (docs/protocol.md, "GoAway from a client"): it means what a
/// server's does, the other way round. The server finishes its own calls to that client up to the
/// id it carries, starts none after it, and keeps serving the client's calls: nothing in flight is
/// lost (the connection used to be dropped as a protocol error).</summary>
public class ClientGoAwayTests
{
    private static readonly uint Register = MuxMethodId.Compute("Mux.Tests.Callbacks.ICallbackHub.Register");

    [Fact]
    public async Task AClientsGoAway_IsServedAsADrain_TheServerFinishesItsCallsUpToIt_StartsNoMore_AndKeepsServingTheClient()
    {
        await using CallbackHost host = await CallbackHost.StartAsync(TransportKind.Tcp);
        await using RawMuxPeer client = await RawMuxPeer.ConnectAsync(host.Server.LocalEndPoint!);
        await client.HandshakeAsync();
        await client.SendAsync(WriteFrame(FrameType.Request, 1, Register, new RawBody([0x90])));
        Assert.Equal(FrameType.Response, (await client.ExpectFrameAsync()).Type);
        Assert.True(host.Hub.Registered.TryDequeue(out MuxRemoteClient? remote));
        IClientSide side = remote!.CreateProxy<IClientSide>();

        // The server's call 1 to the client is on its way when the client sends GoAway(1).
        Task<string> first = side.Fast("a").AsTask();
        ReceivedFrame request = await client.ExpectFrameAsync();
        Assert.Equal((FrameType.Request, FrameFlags.ServerInitiated), (request.Type, request.Flags));
        byte[] lastServed = new byte[ProtocolConstants.GoAwayPayloadSize];
        BinaryPrimitives.WriteUInt32LittleEndian(lastServed, request.CallId);
        await client.SendAsync(WriteRawFrame(FrameType.GoAway, 0, lastServed));
        await Hosts.WaitUntilAsync(() => host.Server.Connections.Single().Outgoing.IsGoingAway, "the server to take the client's GoAway");

        // A call after it is not sent: it fails as never run, safe to retry elsewhere.
        var refused = await Assert.ThrowsAsync<MuxConnectionException>(() => side.Fast("b").AsTask().WaitAsync(TestHost.Patience));
        Assert.True(refused.IsSafeToRetry);
        Assert.Contains("is shutting down (it sent GoAway); the call was not sent.", refused.Message, StringComparison.Ordinal);

        // The call up to GoAway's id still completes with the client's answer.
        await client.SendAsync(Flagged(FrameType.Response, request.CallId, [0xa1, 0x7a]));
        Assert.Equal("z", await first.WaitAsync(TestHost.Patience));

        // The client's own calls are still served, on the same connection.
        await client.SendAsync(WriteFrame(FrameType.Request, 2, Register, new RawBody([0x90])));
        ReceivedFrame answer = await client.ExpectFrameAsync();
        Assert.Equal((FrameType.Response, FrameFlags.None, 2u), (answer.Type, answer.Flags, answer.CallId));
        Assert.True(remote.IsConnected);
        Assert.Equal(1, host.Server.ActiveConnections);
    }

    private static byte[] Flagged(FrameType type, uint callId, byte[] body)
    {
        var raw = new RawBody(body);
        using var output = new PooledBufferWriter();
        FrameWriter.Write(output, type, callId, 0, ref raw, FrameFlags.ServerInitiated);
        return output.WrittenSpan.ToArray();
    }
}
