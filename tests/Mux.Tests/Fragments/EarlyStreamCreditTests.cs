using System.Buffers.Binary;
using MessagePack;
using Mux.Protocol;
using Mux.Tests.Infrastructure;
using Mux.Tests.Protocol;

namespace Mux.Tests.Fragments;

/// <summary>StreamCredit may cross a fragmented Request of its call (docs/protocol.md, *Fragments*):
/// credit that arrives before the Request's last fragment is written adds to the window the client
/// opens then, whatever its size.</summary>
public sealed class EarlyStreamCreditTests
{
    private static async IAsyncEnumerable<int> Items(int count)
    {
        for (int i = 0; i < count; i++)
        {
            await Task.Yield();
            yield return i;
        }
    }

    [Fact]
    public async Task ACreditOfIntMaxValue_BeforeTheLastFragmentOfAStreamingRequest_LeavesTheCallAndTheConnectionWorking()
    {
        await using RawServer server = await RawServer.StartAsync(new MuxClientOptions { CallTimeout = TimeSpan.FromMinutes(1) });
        IHeaderedStreams proxy = server.Client.CreateProxy<IHeaderedStreams>();
        // 16 MiB: far more than the socket buffers hold, so the client's writer waits for this
        // peer to read while its reader takes the credit.
        Task<int[]> call = proxy.Collect(BlobService.Pattern(16 * 1024 * 1024), Items(3));

        ReceivedFrame first = await server.Peer.ExpectFrameAsync();
        Assert.Equal(FrameType.Request, first.Type);
        Assert.Equal(FrameFlags.MoreFragments, first.Flags & FrameFlags.MoreFragments);
        // A consumer that accepts any number of items says so at once: the window the client opens
        // at the last fragment (the peer's streamWindow) comes on top, past what a window counts.
        // The Ping after it shows when the client's reader has taken the credit: its Pong.
        byte[] credit = new byte[ProtocolConstants.StreamCreditPayloadSize];
        BinaryPrimitives.WriteUInt32LittleEndian(credit, int.MaxValue);
        await server.Peer.SendAsync([
            .. FragmentWire.Whole(FrameType.StreamCredit, first.CallId, credit),
            .. FragmentWire.Whole(FrameType.Ping, 0, new byte[ProtocolConstants.PingPayloadSize])]);

        bool ponged = false;
        bool pongBeforeLastFragment = false;
        bool lastFragment = false;
        int items = 0;
        ReceivedFrame frame;
        do
        {
            frame = await server.Peer.ExpectFrameAsync();
            ponged |= frame.Type == FrameType.Pong;
            if (frame.Type == FrameType.Continuation && (frame.Flags & FrameFlags.MoreFragments) == 0)
            {
                lastFragment = true;
                pongBeforeLastFragment = ponged;
            }

            if (frame.Type == FrameType.StreamItem)
            {
                Assert.True(lastFragment, "A stream item overtook its Request's last fragment.");
                items++;
            }
        }
        while (frame.Type != FrameType.StreamEnd);

        Assert.True(pongBeforeLastFragment, "The client wrote the Request's last fragment before it took the credit: the test did not test the early credit.");
        Assert.Equal(3, items);
        await server.Peer.SendAsync(FragmentWire.Whole(FrameType.Response, first.CallId, MessagePackSerializer.Serialize(new[] { 0, 1, 2 })));
        int[] read = await call.WaitAsync(TestHost.Patience);
        Assert.Equal([0, 1, 2], read);
        Assert.Equal(MuxClientState.Connected, server.Client.State);
    }
}
