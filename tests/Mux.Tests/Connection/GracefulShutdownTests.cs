using System.Buffers.Binary;
using Mux.Protocol;
using Mux.Tests.Protocol;
using Mux.Tests.Infrastructure;

namespace Mux.Tests.Connection;

/// <summary>Stopping a server loses nothing: every call it accepted is answered, the client learns
/// which calls never ran, and the connection ends with FIN on both sides, not a reset.</summary>
public class GracefulShutdownTests
{
    [Fact]
    public async Task RawClientThatKeepsSendingWhileReadingSlowly_GetsGoAwayAndEveryAcceptedResponse_WithoutAReset()
    {
        // This raw client sends ten requests per frame it reads and ignores the advertised call cap;
        // on a loaded machine the handlers lag and more than the default 1,000 run at once, which
        // the server rightly refuses (TooManyCalls). The cap has its own tests: lift it here.
        await using TestHost host = await TestHost.StartTcpAsync(new MuxServerOptions { MaxConcurrentCallsPerConnection = int.MaxValue });
        // A small kernel buffer and small reads: the server's responses back up while we keep sending.
        await using RawMuxPeer raw = await RawMuxPeer.ConnectAsync(host.Server.LocalEndPoint!, receiveBufferSize: 8 * 1024, chunkSize: 512);
        await raw.HandshakeAsync();

        uint next = 1;
        await raw.SendAsync(Batch(ref next, 200));
        // The server is serving: stop it now. Handlers run concurrently, so any of the 200 may be first.
        ReceivedFrame first = (await raw.ReceiveFrameAsync())!;
        Assert.Equal(FrameType.Response, first.Type);
        Task stopping = host.Server.StopAsync(new CancellationTokenSource(TestHost.Patience).Token);

        var answered = new HashSet<uint> { first.CallId };
        uint? goAway = null;
        while (true)
        {
            if (goAway is null)
            {
                await raw.SendAsync(Batch(ref next, 10)); // Keeps sending until it reads GoAway.
            }

            ReceivedFrame? frame = await raw.ReceiveFrameAsync(); // Fails the test on a reset.
            if (frame is null)
            {
                break;
            }

            if (frame.Type == FrameType.GoAway)
            {
                goAway = BinaryPrimitives.ReadUInt32LittleEndian(frame.Payload);
                raw.ShutdownSend();
            }
            else
            {
                Assert.Equal(FrameType.Response, frame.Type);
                Assert.Equal((byte)(frame.CallId % 100 + 1), frame.Payload[0]); // Add(id % 100, 1)
                Assert.True(answered.Add(frame.CallId), $"Call {frame.CallId} was answered twice.");
            }
        }

        Assert.NotNull(goAway);
        Assert.InRange(goAway.Value, 1u, next - 1);
        // Every request up to the GoAway id was run and answered; none above it was run.
        Assert.Equal(Enumerable.Range(1, (int)goAway.Value).Select(i => (uint)i), answered.Order());
        await stopping.WaitAsync(TestHost.Patience);
        Assert.Equal(0, host.Server.ActiveConnections);
    }

    [Fact]
    public async Task RawClientStillSendingWhenTheServerFinishes_GetsEveryAcceptedResponseThenAnOrderlyEnd_NotAReset()
    {
        // Unlike the test above, this client does not stop sending at GoAway (a real client's
        // requests may already be on their way): it sends until it has every answer the GoAway
        // promised, and only then ends its side. So when the server has written its last response,
        // requests it has not read are still arriving. A server that closed its socket then would
        // reset the connection (Linux sends RST for bytes arriving at a closed socket) and drop the
        // responses still in its send buffer; it must keep reading, discarding, until the FIN.
        await using TestHost host = await TestHost.StartTcpAsync(new MuxServerOptions { MaxConcurrentCallsPerConnection = int.MaxValue });
        await using RawMuxPeer raw = await RawMuxPeer.ConnectAsync(host.Server.LocalEndPoint!, receiveBufferSize: 8 * 1024, chunkSize: 512);
        await raw.HandshakeAsync();

        // 1.2 MB of answers for a client that reads through an 8 KB buffer: most of them are still
        // in the server's send buffer when its last call has finished.
        uint next = 1;
        for (; next <= 300; next++)
        {
            await raw.SendAsync(RawMuxPeer.Request(next, "Bytes", ValueTuple.Create(4096)));
        }

        ReceivedFrame first = (await raw.ReceiveFrameAsync())!;
        Assert.Equal(FrameType.Response, first.Type);
        Task stopping = host.Server.StopAsync(new CancellationTokenSource(TestHost.Patience).Token);

        var answered = new HashSet<uint> { first.CallId };
        uint? goAway = null;
        bool finSent = false;
        while (true)
        {
            if (goAway is { } promised && answered.Count >= promised)
            {
                if (!finSent)
                {
                    raw.ShutdownSend(); // Every promised answer is in: end our side.
                    finSent = true;
                }
            }
            else
            {
                await raw.SendAsync(Batch(ref next, 10)); // Fails the test on a reset.
            }

            ReceivedFrame? frame = await raw.ReceiveFrameAsync(); // Fails the test on a reset.
            if (frame is null)
            {
                break;
            }

            if (frame.Type == FrameType.GoAway)
            {
                goAway = BinaryPrimitives.ReadUInt32LittleEndian(frame.Payload);
            }
            else
            {
                Assert.Equal(FrameType.Response, frame.Type);
                Assert.True(answered.Add(frame.CallId), $"Call {frame.CallId} was answered twice.");
            }
        }

        Assert.True(finSent, "The server ended the stream before sending every answer its GoAway promised.");
        Assert.Equal(Enumerable.Range(1, (int)goAway!.Value).Select(i => (uint)i), answered.Order());
        await stopping.WaitAsync(TestHost.Patience);
        Assert.Equal(0, host.Server.ActiveConnections);
    }

    [Fact]
    public async Task IdsArrivingOutOfOrder_GoAwayCarriesTheHighestReceived_AndNoCallAboveItRuns()
    {
        await using TestHost host = await TestHost.StartTcpAsync();
        await using RawMuxPeer raw = await RawMuxPeer.ConnectAsync(host.Server.LocalEndPoint!);
        await raw.HandshakeAsync();

        // Call 10 reaches the server before call 7, as it can from a client whose callers race.
        await raw.SendAsync(RawMuxPeer.Request(10, "Hang", ValueTuple.Create(10)));
        await raw.SendAsync(RawMuxPeer.Request(7, "Hang", ValueTuple.Create(7)));
        await Hosts.WaitUntilAsync(() => host.Service.HangingCalls == 2, "both calls to run");
        Task stopping = host.Server.StopAsync(new CancellationTokenSource(TestHost.Patience).Token);

        ReceivedFrame goAway = (await raw.ReceiveFrameAsync())!;
        Assert.Equal(FrameType.GoAway, goAway.Type);
        Assert.Equal(10u, BinaryPrimitives.ReadUInt32LittleEndian(goAway.Payload));

        // A straggler below the GoAway id is still served; a call above it must not run, because a
        // client reports it as "never ran, safe to retry".
        await raw.SendAsync(RawMuxPeer.AddRequest(8, 8, 1));
        await raw.SendAsync(RawMuxPeer.AddRequest(12, 12, 1));
        host.Service.ReleaseHangingCalls();
        raw.ShutdownSend();

        var answered = new List<uint>();
        while (await raw.ReceiveFrameAsync() is { } frame)
        {
            Assert.Equal(FrameType.Response, frame.Type);
            answered.Add(frame.CallId);
        }

        Assert.Equal([7u, 8u, 10u], answered.Order());
        await stopping.WaitAsync(TestHost.Patience);
    }

    [Fact]
    public async Task ClientWithACallInFlight_WhenTheServerStops_GetsItsResultThenClosesWithGoAway()
    {
        // The connection's own behaviour, so no reconnect: with it, new calls would wait for the next server.
        await using TestHost host = await TestHost.StartTcpAsync(clientOptions: new MuxClientOptions { AutoReconnect = false });
        Task<int> promised = host.Proxy.Hang(1);
        await Hosts.WaitUntilAsync(() => host.Service.HangingCalls == 1, "the call to run");

        Task stopping = host.Server.StopAsync(new CancellationTokenSource(TestHost.Patience).Token);
        var refused = await Assert.ThrowsAsync<MuxConnectionException>(async () =>
        {
            // New calls stop at the client once GoAway has arrived.
            while (true)
            {
                await host.Proxy.Add(1, 2).AsTask().WaitAsync(TestHost.Patience);
            }
        });
        Assert.Equal(MuxCloseReason.GoAway, refused.Reason);
        Assert.True(host.Client.IsConnected, "The client must wait for the call the server promised.");

        host.Service.ReleaseHangingCalls();
        Assert.Equal(1, await promised.WaitAsync(TestHost.Patience));
        await host.Client.Completion.WaitAsync(TestHost.Patience);
        Assert.Equal(MuxCloseReason.GoAway, host.Client.Connection.CloseReason);
        await stopping.WaitAsync(TestHost.Patience);
        Assert.Equal(0, host.Server.ActiveConnections);
    }

    private static byte[] Batch(ref uint next, int count)
    {
        var frames = new List<byte>();
        for (int i = 0; i < count; i++, next++)
        {
            frames.AddRange(RawMuxPeer.AddRequest(next, (int)(next % 100), 1));
        }

        return [.. frames];
    }
}
