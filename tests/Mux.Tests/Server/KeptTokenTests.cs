using System.Net;
using MessagePack;
using Mux.Protocol;
using Mux.Server;
using Mux.Tests.Deadlines;
using Mux.Tests.Infrastructure;
using Mux.Tests.Protocol;
using static Mux.Tests.Protocol.ProtocolTestHelpers;

namespace Mux.Tests.Server;

/// <summary>
/// A handler may keep its CancellationToken after it returns (background work it started holds
/// it). That token belongs to its own call: a later call served by the same pooled call object,
/// cancelled by its caller or stopped at its deadline, must never make it fire (issue 22: 200 kept
/// tokens all fired once 300 later calls were cancelled, because the source behind them was reset
/// and reused). Each test keeps 200 tokens, 20 calls at a time so that the connection's 20 call
/// objects serve ten of them each, then ends 300 other calls on the same connection.
/// </summary>
public sealed class KeptTokenTests
{
    private const int Batch = 20;
    private const int KeptCalls = 200;
    private const int EndedCalls = 300;

    private static readonly uint s_keep = MuxMethodId.Compute("Mux.Tests.Server.IKeptTokenService.Keep");
    private static readonly uint s_waitForCancel = MuxMethodId.Compute("Mux.Tests.Server.IKeptTokenService.WaitForCancel");

    [Fact]
    public async Task KeptTokens_NeverFire_WhenLaterCallsOnTheConnectionAreCancelledByTheirCallers()
    {
        var service = new KeptTokenService();
        var server = new MuxServer(new MuxServerOptions { MaxConcurrentCallsPerConnection = Batch });
        server.AddService<IKeptTokenService>(service);
        MuxClient client = await server.ConnectInMemoryAsync().WaitAsync(TestHost.Patience);
        IKeptTokenService proxy = client.CreateProxy<IKeptTokenService>();
        try
        {
            for (int first = 0; first < KeptCalls; first += Batch)
            {
                await Task.WhenAll(Enumerable.Range(first, Batch).Select(id => proxy.Keep(id))).WaitAsync(TestHost.Patience);
            }

            ServerConnection connection = server.Connections.Single();
            await Hosts.WaitUntilAsync(() => connection.Incoming.Count == 0, "the server to finish the Keep calls");
            Assert.Equal(KeptCalls, service.KeptCount);
            service.Watch();

            for (int ended = 0; ended < EndedCalls; ended += Batch)
            {
                using var cancellation = new CancellationTokenSource();
                Task[] calls = [.. Enumerable.Range(0, Batch).Select(_ => proxy.WaitForCancel(cancellation.Token))];
                await Hosts.WaitUntilAsync(() => service.Waiting == Batch, $"{Batch} WaitForCancel handlers to wait");
                await cancellation.CancelAsync();
                foreach (Task call in calls)
                {
                    await Assert.ThrowsAnyAsync<OperationCanceledException>(() => call.WaitAsync(TestHost.Patience));
                }

                // Each handler saw its own token fire before the next batch starts.
                await Hosts.WaitUntilAsync(() => service.Cancelled == ended + Batch, "the cancelled handlers to see their tokens fire");
            }

            await Hosts.WaitUntilAsync(() => connection.Incoming.Count == 0, "the server to finish the cancelled calls");
            AssertNoKeptTokenFired(service);
        }
        finally
        {
            await client.DisposeAsync().AsTask().WaitAsync(TestHost.Patience);
            using var stop = new CancellationTokenSource(TestHost.Patience);
            await server.StopAsync(stop.Token).WaitAsync(TestHost.Patience + TestHost.Patience);
        }
    }

    [Fact]
    public async Task KeptTokens_NeverFire_WhenLaterCallsOnTheConnectionReachTheirDeadlines()
    {
        // The server's own clock, on purpose: a source on another TimeProvider was never reused
        // (TryReset refuses a source with such a timer), so only this one can show the hole. The
        // Keep requests carry no deadline, so no time passing is a reason of their own for their
        // tokens to fire; each later request carries 50 ms and must end at it.
        var service = new KeptTokenService();
        await using var server = new MuxServer(new MuxServerOptions
        {
            EndPoint = new IPEndPoint(IPAddress.Loopback, 0),
            KeepAliveInterval = Timeout.InfiniteTimeSpan,
            MaxConcurrentCallsPerConnection = Batch,
        });
        server.AddService<IKeptTokenService>(service);
        await server.StartAsync().WaitAsync(TestHost.Patience);
        await using RawMuxPeer peer = await RawMuxPeer.ConnectAsync(server.LocalEndPoint!);
        await peer.HandshakeAsync();
        ServerConnection connection = server.Connections.Single();

        uint callId = 0;
        for (int first = 0; first < KeptCalls; first += Batch)
        {
            var ids = new HashSet<uint>();
            for (int id = first; id < first + Batch; id++)
            {
                ids.Add(++callId);
                await peer.SendAsync(WriteFrame(FrameType.Request, callId, s_keep, new RawBody(MessagePackSerializer.Serialize(ValueTuple.Create(id)))));
            }

            await ExpectAnswersAsync(peer, ids, FrameType.Response);
        }

        await Hosts.WaitUntilAsync(() => connection.Incoming.Count == 0, "the server to finish the Keep calls");
        Assert.Equal(KeptCalls, service.KeptCount);
        service.Watch();

        for (int ended = 0; ended < EndedCalls; ended += Batch)
        {
            var ids = new HashSet<uint>();
            for (int i = 0; i < Batch; i++)
            {
                ids.Add(++callId);
                await peer.SendAsync(DeadlineTests.WriteRequest(callId, s_waitForCancel, remainingMilliseconds: 50));
            }

            await ExpectAnswersAsync(peer, ids, FrameType.Error, MuxStatusCode.DeadlineExceeded);
            await Hosts.WaitUntilAsync(() => service.Cancelled == ended + Batch, "the handlers to see their deadlines");
        }

        await Hosts.WaitUntilAsync(() => connection.Incoming.Count == 0, "the server to finish the calls stopped at their deadlines");
        AssertNoKeptTokenFired(service);
    }

    private static void AssertNoKeptTokenFired(KeptTokenService service)
    {
        int[] cancelled = service.CancelledNow;
        Assert.True(cancelled.Length == 0, $"{cancelled.Length} of {KeptCalls} kept tokens report a cancellation that was another call's (ids {string.Join(", ", cancelled.Take(10))}, ...).");
        int[] fired = service.Fired;
        Assert.True(fired.Length == 0, $"{fired.Length} of {KeptCalls} kept tokens ran a callback registered after their call had finished.");
    }

    /// <summary>Reads one answer of <paramref name="type"/> for each of <paramref name="ids"/>, in any order.</summary>
    private static async Task ExpectAnswersAsync(RawMuxPeer peer, HashSet<uint> ids, FrameType type, MuxStatusCode? code = null)
    {
        int count = ids.Count;
        for (int i = 0; i < count; i++)
        {
            ReceivedFrame answer = await peer.ExpectFrameAsync();
            Assert.Equal(type, answer.Type);
            Assert.True(ids.Remove(answer.CallId), $"An answer for call {answer.CallId}, which was not asked or was answered already.");
            if (code is { } expected)
            {
                Assert.Equal(expected, ErrorBody.Read(answer.Payload).Code);
            }
        }
    }
}
