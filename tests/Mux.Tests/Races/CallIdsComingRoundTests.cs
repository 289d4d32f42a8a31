using System.Net.Sockets;
using MessagePack;
using Mux.Protocol;
using Mux.Tests.Infrastructure;
using Mux.Tests.Protocol;

namespace Mux.Tests.Races;

/// <summary>
/// Call ids are 32 bits: after 2^32 calls on one connection (about 72 minutes at a million calls a
/// second) they come round, and an id handed out again must not be one still in use. A call still
/// waiting for its answer was skipped; one its caller gave up on was not, though its answer is
/// still to come (the peer answers a Cancel too): that late answer then completed the new call
/// with the old call's result, or a peer still running the old call closed the connection on the
/// reused id.
/// </summary>
public sealed class CallIdsComingRoundTests
{
    [Fact]
    public async Task AnIdThatComesRound_SkipsACallGivenUpOn_WhoseAnswerIsStillToCome()
    {
        using TcpListener listener = RawMuxPeer.Listen();
        var options = new MuxClientOptions { KeepAliveInterval = Timeout.InfiniteTimeSpan, AutoReconnect = false };
        Task<MuxClient> connecting = MuxClient.ConnectAsync(listener.LocalEndpoint, options);
        await using RawMuxPeer peer = await RawMuxPeer.AcceptAsync(listener);
        await peer.AnswerHelloAsync(maxConcurrentCalls: 2);
        MuxClient client = await connecting.WaitAsync(TestHost.Patience);
        try
        {
            IRaceService proxy = client.CreateProxy<IRaceService>();

            // The first call's caller gives up on it; the peer has not answered it yet.
            using var giveUp = new CancellationTokenSource();
            Task<int> first = proxy.Respond(1, -1, giveUp.Token);
            ReceivedFrame firstRequest = await peer.ExpectFrameAsync();
            Assert.Equal(FrameType.Request, firstRequest.Type);
            giveUp.Cancel();
            await Assert.ThrowsAnyAsync<OperationCanceledException>(() => first).WaitAsync(TestHost.Patience);
            ReceivedFrame cancel = await peer.ExpectFrameAsync();
            Assert.Equal((FrameType.Cancel, firstRequest.CallId), (cancel.Type, cancel.CallId));

            // The ids come round (as 2^32 calls later): the next call would take the given-up call's id.
            client.Connection.Outgoing.WrapCallIds();
            Task<int> second = proxy.Respond(2, 0);
            ReceivedFrame secondRequest = await peer.ExpectFrameAsync();
            Assert.Equal(FrameType.Request, secondRequest.Type);

            // The peer answers the first call (its handler returned 1 before it saw the Cancel), then the second.
            await peer.SendAsync(ProtocolTestHelpers.WriteRawFrame(FrameType.Response, firstRequest.CallId, MessagePackSerializer.Serialize(1)));
            await peer.SendAsync(ProtocolTestHelpers.WriteRawFrame(FrameType.Response, secondRequest.CallId, MessagePackSerializer.Serialize(2)));

            Assert.Equal(2, await second.WaitAsync(TestHost.Patience));
            Assert.NotEqual(firstRequest.CallId, secondRequest.CallId);
            await Hosts.WaitUntilAsync(() => client.Connection.Outgoing.SlotAccount == (2, 0), "both answers to free their slots");
        }
        finally
        {
            // The peer goes first: a client that closes gracefully waits for the answers to its calls.
            peer.Close();
            await client.DisposeAsync().AsTask().WaitAsync(TestHost.Patience);
        }
    }
}
