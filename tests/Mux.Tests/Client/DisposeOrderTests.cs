using System.Buffers.Binary;
using System.Net.Sockets;
using Microsoft.Extensions.Time.Testing;
using Mux.Tests.Client.Balancing;
using Mux.Protocol;
using Mux.Tests.Infrastructure;
using Mux.Tests.Protocol;
using static Mux.Tests.Protocol.ProtocolTestHelpers;

namespace Mux.Tests.Client;

/// <summary>
/// <see cref="MuxClient.Completion"/> and the Closed state mean what they say: once the client
/// reports itself closed by a dispose, its connections are closed too (a handler of the change, or
/// code awaiting Completion, reads the closed connection's reason, not an open connection's None).
/// </summary>
public sealed class DisposeOrderTests
{
    [Fact]
    public async Task OneEndPoint_ClosedIsReported_OnceItsConnectionHasClosed()
    {
        await using BalanceCluster cluster = await BalanceCluster.StartAsync(1);
        MuxClient client = await MuxClient.ConnectAsync(cluster.EndPoints[0]).WaitAsync(TestHost.Patience);
        Task connectionClosed = client.Connection.Completion;
        bool? closedFirst = null;
        client.StateChanged += (_, change) => closedFirst ??= change.State == MuxClientState.Closed ? connectionClosed.IsCompleted : null;

        ValueTask dispose = client.DisposeAsync();
        await client.Completion.WaitAsync(TestHost.Patience);

        Assert.True(connectionClosed.IsCompleted, "The client completed before its connection closed.");
        Assert.Equal(true, closedFirst);
        Assert.Equal(MuxCloseReason.LocalShutdown, client.CloseReason);
        await dispose.AsTask().WaitAsync(TestHost.Patience);
    }

    [Fact]
    public async Task SeveralInstances_ClosedIsReported_OnceEveryInstanceHasClosed()
    {
        await using BalanceCluster cluster = await BalanceCluster.StartAsync(3);
        MuxClient client = await MuxClient.ConnectAsync(cluster.ClientOptions()).WaitAsync(TestHost.Patience);
        await Hosts.WaitUntilAsync(() => client.GetEndPointStatistics().All(e => e.State == MuxClientState.Connected), "every instance is connected");

        ValueTask dispose = client.DisposeAsync();
        await client.Completion.WaitAsync(TestHost.Patience);

        Assert.Equal([MuxClientState.Closed, MuxClientState.Closed, MuxClientState.Closed], client.GetEndPointStatistics().Select(e => e.State));
        Assert.False(client.IsConnected);
        await dispose.AsTask().WaitAsync(TestHost.Patience);
    }

    [Fact]
    public async Task SeveralInstances_ASecondDisposeMeanwhile_CompletesOnlyOnceEveryInstanceHasClosed()
    {
        await using BalanceCluster cluster = await BalanceCluster.StartAsync(3);
        MuxClient client = await MuxClient.ConnectAsync(cluster.ClientOptions()).WaitAsync(TestHost.Patience);
        await Hosts.WaitUntilAsync(() => client.GetEndPointStatistics().All(e => e.State == MuxClientState.Connected), "every instance is connected");

        ValueTask first = client.DisposeAsync();
        await client.DisposeAsync().AsTask().WaitAsync(TestHost.Patience);

        Assert.Equal([MuxClientState.Closed, MuxClientState.Closed, MuxClientState.Closed], client.GetEndPointStatistics().Select(e => e.State));
        Assert.Equal(MuxClientState.Closed, client.State);
        await first.AsTask().WaitAsync(TestHost.Patience);
    }

    [Fact]
    public async Task SeveralInstances_WhoseServersDoNotAnswerTheClose_AreClosedTogether_NotOneDrainAfterAnother()
    {
        // Hand-written servers that answer the handshake, then neither close nor answer the client's
        // close; the client's clock never moves, so each connection's graceful close waits (its drain)
        // until its server closes.
        TcpListener[] listeners = [RawMuxPeer.Listen(), RawMuxPeer.Listen(), RawMuxPeer.Listen()];
        var peers = new List<RawMuxPeer>();
        var options = new MuxClientOptions
        {
            TimeProvider = new FakeTimeProvider(),
            KeepAliveInterval = Timeout.InfiniteTimeSpan,
            ConnectTimeout = TimeSpan.FromMinutes(5),
        };
        foreach (TcpListener listener in listeners)
        {
            options.EndPoints.Add(listener.LocalEndpoint);
        }

        MuxClient client = MuxClient.Create(options);
        try
        {
            foreach (TcpListener listener in listeners)
            {
                RawMuxPeer peer = await RawMuxPeer.AcceptAsync(listener);
                peers.Add(peer);
                await peer.AnswerHelloAsync();
            }

            await Hosts.WaitUntilAsync(() => client.GetEndPointStatistics().All(e => e.State == MuxClientState.Connected), "every instance is connected");
            ValueTask dispose = client.DisposeAsync();

            // Every server sees its connection end at once. Before, the instances were closed one
            // after another, each once the one before had drained, which here it never does.
            await AssertEveryConnectionEndsAsync(peers, dispose, client);
        }
        finally
        {
            foreach (RawMuxPeer peer in peers)
            {
                peer.Dispose();
            }

            foreach (TcpListener listener in listeners)
            {
                listener.Stop();
            }
        }
    }

    [Fact]
    public async Task OneEndPoint_ItsDrainingAndCurrentConnections_ToServersThatDoNotAnswerTheClose_AreClosedTogether()
    {
        // A hand-written server that sends GoAway with a call still to serve, then says nothing; the
        // client reconnects to a second one that is as silent. The client's clock never moves, so each
        // connection's graceful close waits (its drain) until its server closes.
        TcpListener listener = RawMuxPeer.Listen();
        var peers = new List<RawMuxPeer>();
        var options = new MuxClientOptions
        {
            EndPoint = listener.LocalEndpoint,
            TimeProvider = new FakeTimeProvider(),
            KeepAliveInterval = Timeout.InfiniteTimeSpan,
            ConnectTimeout = TimeSpan.FromMinutes(5),
        };
        MuxClient client = MuxClient.Create(options);
        try
        {
            ITestService proxy = client.CreateProxy<ITestService>();
            RawMuxPeer goingAway = await RawMuxPeer.AcceptAsync(listener);
            peers.Add(goingAway);
            await goingAway.AnswerHelloAsync();
            Task<int> served = proxy.Add(1, 2).AsTask();
            ReceivedFrame request = await goingAway.ExpectFrameAsync();
            Assert.Equal(FrameType.Request, request.Type);
            byte[] lastServed = new byte[ProtocolConstants.GoAwayPayloadSize];
            BinaryPrimitives.WriteUInt32LittleEndian(lastServed, request.CallId);
            await goingAway.SendAsync(WriteRawFrame(FrameType.GoAway, 0, lastServed));

            // The next call (whether or not the GoAway overtook it) goes to a new connection.
            Task<int> next = proxy.Add(3, 4).AsTask();
            RawMuxPeer current = await RawMuxPeer.AcceptAsync(listener);
            peers.Add(current);
            await current.AnswerHelloAsync();
            Assert.Equal(FrameType.Request, (await current.ExpectFrameAsync()).Type);

            ValueTask dispose = client.DisposeAsync();

            // Both servers see their connection end at once. Before, the draining connection was
            // closed first and the current one only once that had drained, which here it never does.
            await AssertEveryConnectionEndsAsync(peers, dispose, client);
            await Assert.ThrowsAsync<MuxConnectionException>(() => served.WaitAsync(TestHost.Patience));
            await Assert.ThrowsAsync<MuxConnectionException>(() => next.WaitAsync(TestHost.Patience));
        }
        finally
        {
            foreach (RawMuxPeer peer in peers)
            {
                peer.Dispose();
            }

            listener.Stop();
        }
    }

    [Fact]
    public async Task OneEndPoint_AConnectionStillClosingAfterGoAway_IsClosedBeforeTheClientReportsClosed()
    {
        // A hand-written server sends GoAway with no call to serve: the client closes that connection
        // at once, gracefully, and waits (its drain, on a clock that never moves) for the server, which
        // says nothing. A call then takes the client to a second server.
        TcpListener listener = RawMuxPeer.Listen();
        var peers = new List<RawMuxPeer>();
        MuxClient client = MuxClient.Create(new MuxClientOptions
        {
            EndPoint = listener.LocalEndpoint,
            TimeProvider = new FakeTimeProvider(),
            KeepAliveInterval = Timeout.InfiniteTimeSpan,
            ConnectTimeout = TimeSpan.FromMinutes(5),
        });
        try
        {
            RawMuxPeer goingAway = await RawMuxPeer.AcceptAsync(listener);
            peers.Add(goingAway);
            await goingAway.AnswerHelloAsync();
            await Hosts.WaitUntilAsync(() => client.State == MuxClientState.Connected, "the client is connected");
            Task closing = client.Connection.Completion;
            await goingAway.SendAsync(WriteRawFrame(FrameType.GoAway, 0, new byte[ProtocolConstants.GoAwayPayloadSize]));
            Assert.Null(await goingAway.ReceiveFrameAsync());

            Task<int> call = client.CreateProxy<ITestService>().Add(1, 2).AsTask();
            RawMuxPeer current = await RawMuxPeer.AcceptAsync(listener);
            peers.Add(current);
            await current.AnswerHelloAsync();
            Assert.Equal(FrameType.Request, (await current.ExpectFrameAsync()).Type);
            Task currentClosed = client.Connection.Completion;

            // Read when the client reports itself closed (the handler runs before Completion does).
            bool? closedFirst = null;
            client.StateChanged += (_, e) =>
            {
                if (e.State == MuxClientState.Closed)
                {
                    closedFirst = closing.IsCompleted;
                }
            };

            ValueTask dispose = client.DisposeAsync();
            Assert.Null(await current.ReceiveFrameAsync());
            current.Dispose();
            await currentClosed.WaitAsync(TestHost.Patience);

            // Only now does the first server close its end. Before, the client was closed by then,
            // its first connection still open: the keeper lost track of a connection retired while
            // its close was under way.
            goingAway.Dispose();
            await dispose.AsTask().WaitAsync(TestHost.Patience);
            Assert.True(closedFirst, "The first connection was still open when the client reported itself closed.");
            Assert.True(closing.IsCompleted);
            await Assert.ThrowsAsync<MuxConnectionException>(() => call.WaitAsync(TestHost.Patience));
        }
        finally
        {
            foreach (RawMuxPeer peer in peers)
            {
                peer.Dispose();
            }

            await client.DisposeAsync();
            listener.Stop();
        }
    }

    /// <summary>Waits until every peer has seen its connection end (each reads to the end, so a close
    /// held back behind another's drain would hang here), then for the disposal, and checks that the
    /// client reports itself closed.</summary>
    private static async Task AssertEveryConnectionEndsAsync(List<RawMuxPeer> peers, ValueTask dispose, MuxClient client)
    {
        foreach (RawMuxPeer peer in peers)
        {
            while (await peer.ReceiveFrameAsync() is not null)
            {
            }
        }

        foreach (RawMuxPeer peer in peers)
        {
            peer.Dispose();
        }

        await dispose.AsTask().WaitAsync(TestHost.Patience);
        Assert.Equal(MuxClientState.Closed, client.State);
    }
}
