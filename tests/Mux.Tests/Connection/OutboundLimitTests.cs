using Mux.Protocol;
using Mux.Server;
using Mux.Tests.Fragments;
using Mux.Tests.Infrastructure;

namespace Mux.Tests.Connection;

/// <summary>A client that sends requests but never reads the answers costs the server a bounded
/// amount of memory (MuxServerOptions.MaxOutboundBytesPerConnection), and other clients are served.
/// Serial: the bound is read from the process's whole heap, which tests moving megabytes in
/// parallel (the fragment tests) would add to.</summary>
[Collection(SerialCollection.Name)]
public class OutboundLimitTests
{
    private const int Requests = 200_000;

    // The answers queued (1 MiB) and in the transport's pipe, the requests buffered on the input
    // side, and up to MaxConcurrentCallsPerConnection answers of calls already running: a few MiB.
    // Without the limit, the server held every one of the 200K answers (over 200 MB).
    private const long MaxGrowthBytes = 32L * 1024 * 1024;

    [Fact]
    public async Task RawClientThatNeverReads_200KRequestsFor1KiBAnswers_GrowsTheServerByABoundedAmount_AndOthersAreServed()
    {
        await using TestHost host = await TestHost.StartTcpAsync();
        Assert.Equal(3, await host.Proxy.Add(1, 2)); // Warm up: the other client's connection exists.
        ServerConnection[] others = [.. host.Server.Connections];
        long before = GC.GetTotalMemory(forceFullCollection: true);

        await using RawMuxPeer raw = await RawMuxPeer.ConnectAsync(host.Server.LocalEndPoint!, receiveBufferSize: 4096);
        await raw.HandshakeAsync();
        ServerConnection stuck = host.Server.Connections.Except(others).Single();

        // Sends in the background: once the server stops reading, TCP stops this sender too.
        Task sending = Task.Run(async () =>
        {
            const int batch = 1000;
            for (uint next = 1; next <= Requests; next += batch)
            {
                var frames = new List<byte>();
                for (uint id = next; id < next + batch; id++)
                {
                    frames.AddRange(RawMuxPeer.Request(id, "Bytes", ValueTuple.Create(1024)));
                }

                await raw.SendWithoutDeadlineAsync([.. frames]);
            }
        });

        // Either the server stopped taking requests from it, or (without a limit) it took them all.
        await Hosts.WaitUntilAsync(
            () => stuck.Inbound.IsWaitingForRoom || (stuck.Incoming.HighestReceivedCallId == Requests && stuck.Incoming.Count == 0),
            "the server to stop reading the client that does not read, or to have run every request");
        long growth = GC.GetTotalMemory(forceFullCollection: true) - before;
        Assert.True(growth < MaxGrowthBytes, $"The server grew by {growth / (1024 * 1024)} MiB for a client that never reads (bound {MaxGrowthBytes / (1024 * 1024)} MiB).");
        Assert.True(stuck.Incoming.HighestReceivedCallId < Requests, $"The server ran {stuck.Incoming.HighestReceivedCallId} requests for a client that never reads.");

        // Another client is served meanwhile.
        for (int i = 0; i < 100; i++)
        {
            Assert.Equal(i + 1, await host.Proxy.Add(i, 1).AsTask().WaitAsync(TestHost.Patience));
        }

        // The stuck client leaving is noticed: the server's send fails and it closes the connection.
        await raw.DisposeAsync();
        await stuck.Completion.WaitAsync(TestHost.Patience);

        // The sender ends too: it fails on the closed socket, or it had already handed everything
        // to the kernel's buffers (how much fits there depends on TCP autotuning, not on Mux).
        await sending.ContinueWith(static _ => { }, TaskScheduler.Default).WaitAsync(TestHost.Patience);
    }

    public static TheoryData<string> AnsweredFloods => new() { "Pings", "Cancels of Requests still arriving in fragments", "Requests over MaxMessageSize, cancelled" };

    [Theory]
    [MemberData(nameof(AnsweredFloods))]
    public async Task RawClientThatNeverReads_AFloodOfFramesThatTheServerAnswers_IsReadNoFurtherThanTheOutboundLimit_InsteadOfQueueingEveryAnswer(string flood)
    {
        const int Limit = 64 * 1024;
        const int Repeats = 500_000; // Tens of MB of answers: far more than the sockets' buffers hold.
        await using TestHost host = await TestHost.StartTcpAsync(new MuxServerOptions { MaxOutboundBytesPerConnection = Limit });
        Assert.Equal(3, await host.Proxy.Add(1, 2));
        ServerConnection[] others = [.. host.Server.Connections];
        await using RawMuxPeer raw = await RawMuxPeer.ConnectAsync(host.Server.LocalEndPoint!, receiveBufferSize: 4096);
        await raw.HandshakeAsync();
        ServerConnection stuck = host.Server.Connections.Except(others).Single();

        // Each answered with a frame of its own: a Pong, or an Error saying the call was not run
        // (the raw client announced cancelEndsFragments, so the Request ends at its Cancel and its
        // call id is free again).
        byte[] unit = flood switch
        {
            "Pings" => FragmentWire.Whole(FrameType.Ping, 0, new byte[ProtocolConstants.PingPayloadSize]),
            "Cancels of Requests still arriving in fragments" => [.. FragmentWire.First(FrameType.Request, 1, 2000, new byte[100]), .. FragmentWire.Whole(FrameType.Cancel, 1, [])],
            _ => [.. FragmentWire.First(FrameType.Request, 1, 1u << 30, new byte[100]), .. FragmentWire.Whole(FrameType.Cancel, 1, [])],
        };
        Task sending = Task.Run(async () =>
        {
            const int batch = 10_000;
            byte[] frames = new byte[batch * unit.Length];
            for (int i = 0; i < batch; i++)
            {
                unit.CopyTo(frames, i * unit.Length);
            }

            for (int sent = 0; sent < Repeats; sent += batch)
            {
                await raw.SendWithoutDeadlineAsync(frames);
            }
        });

        // Until the server has read every frame (it queued an answer to each: the bug), or it has
        // stopped reading them: nothing it received has changed for a while once its queue is full.
        long frameCount = Repeats * (flood == "Pings" ? 1 : 2);
        long received = -1;
        int unchanged = 0;
        await Hosts.WaitUntilAsync(
            () =>
            {
                long now = stuck.GetStatistics().FramesReceived;
                unchanged = now == received && stuck.Outbound.IsFull ? unchanged + 1 : 0;
                received = now;
                return now > frameCount || unchanged >= 30;
            },
            "the server to read every frame, or to stop reading them");

        // An answer (at most ~150 bytes) is queued only below the limit; a keepalive Ping of the
        // server's own may follow it.
        Assert.True(stuck.Outbound.QueuedBytes <= Limit + 256, $"The server queued {stuck.Outbound.QueuedBytes} bytes of answers for a client that never reads (limit {Limit}).");
        Assert.True(received <= frameCount, "The server read every frame of a client that never reads its answers.");

        // Another client is served meanwhile, and the stuck one leaving is noticed.
        Assert.Equal(5, await host.Proxy.Add(2, 3).AsTask().WaitAsync(TestHost.Patience));
        await raw.DisposeAsync();
        await stuck.Completion.WaitAsync(TestHost.Patience);
        await sending.ContinueWith(static _ => { }, TaskScheduler.Default).WaitAsync(TestHost.Patience);
    }
}
