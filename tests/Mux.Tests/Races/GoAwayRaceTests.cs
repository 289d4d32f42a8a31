using System.Buffers.Binary;
using System.Net;
using System.Net.Sockets;
using MessagePack;
using Mux.Protocol;
using Mux.Tests.Infrastructure;
using Mux.Tests.Protocol;
using static Mux.Tests.Protocol.ProtocolTestHelpers;

namespace Mux.Tests.Races;

/// <summary>
/// A server's GoAway(N) promises to serve calls up to N and no others. Against a hand-written
/// server (so the test decides exactly when GoAway, each response and the close arrive), the
/// client must fail the calls above N at once with the "never ran, safe to retry" signal, still
/// complete the calls up to N with their results, and refuse new calls with the GoAway reason.
/// </summary>
public sealed class GoAwayRaceTests
{
    private const int Calls = 10;
    private const int Served = 6;

    [Fact]
    public async Task GoAway_FailsTheCallsAboveItAtOnce_CompletesTheCallsUpToIt_AndRefusesNewOnes()
    {
        using var listener = new TcpListener(IPAddress.Loopback, 0);
        listener.Start();
        var log = new CapturedLog();
        // The connection's own GoAway handling, so no reconnect: with it, the calls above N would be
        // sent again on a new connection (ReconnectTests cover that).
        Task<MuxClient> connecting = MuxClient.ConnectAsync(listener.LocalEndpoint, new MuxClientOptions { LoggerFactory = log, AutoReconnect = false });
        await using RawMuxPeer peer = await RawMuxPeer.AcceptAsync(listener);
        await peer.AnswerHelloAsync(maxConcurrentCalls: 1000);
        await using MuxClient client = await connecting.WaitAsync(TestHost.Patience);
        IRaceService proxy = client.CreateProxy<IRaceService>();

        Task<int>[] calls = Enumerable.Range(0, Calls).Select(i => proxy.Respond(i, 0)).ToArray();
        var requests = new List<(uint CallId, int Id)>();
        for (int i = 0; i < Calls; i++)
        {
            ReceivedFrame request = await peer.ExpectFrameAsync();
            Assert.Equal(FrameType.Request, request.Type);
            requests.Add((request.CallId, MessagePackSerializer.Deserialize<int[]>(request.Payload)[0]));
        }

        requests.Sort();
        uint lastServed = requests[Served - 1].CallId;
        byte[] goAway = new byte[ProtocolConstants.GoAwayPayloadSize];
        BinaryPrimitives.WriteUInt32LittleEndian(goAway, lastServed);
        await peer.SendAsync(WriteRawFrame(FrameType.GoAway, 0, goAway));

        // Above N: failed by the GoAway itself, while the server has answered nothing and is still connected.
        foreach ((uint callId, int id) in requests.Skip(Served))
        {
            MuxConnectionException error = await Assert.ThrowsAsync<MuxConnectionException>(() => calls[id]).WaitAsync(TestHost.Patience);
            Assert.Equal(MuxCloseReason.GoAway, error.Reason);
            Assert.Contains("safe to retry", error.Message, StringComparison.Ordinal);
        }

        foreach ((uint callId, int id) in requests.Take(Served))
        {
            Assert.False(calls[id].IsCompleted, $"Call {id} (call id {callId}, at or below GoAway's {lastServed}) ended before its response.");
        }

        // A new call is refused without being sent: the server said it will take no more.
        MuxConnectionException refused = await Assert.ThrowsAsync<MuxConnectionException>(() => proxy.Respond(Calls, 0)).WaitAsync(TestHost.Patience);
        Assert.Equal(MuxCloseReason.GoAway, refused.Reason);

        // Up to N: the responses still arrive and complete their calls.
        foreach ((uint callId, int id) in requests.Take(Served))
        {
            await peer.SendAsync(WriteRawFrame(FrameType.Response, callId, MessagePackSerializer.Serialize(id)));
        }

        foreach ((uint callId, int id) in requests.Take(Served))
        {
            Assert.Equal(id, await calls[id].WaitAsync(TestHost.Patience));
        }

        Assert.Equal(0, client.PendingCalls);
        peer.Close();
        await client.Completion.WaitAsync(TestHost.Patience);
        Assert.False(client.IsConnected);
        Assert.Single(log.Entries, e => e.EventId.Id == 1); // The close is recorded (and logged) once.
    }

    /// <summary>
    /// A call made on one thread while GoAway arrives on the reader's is on one side of it: sent
    /// before (and failed by GoAway as not run, since GoAway(0) serves nothing) or refused unsent.
    /// None may slip between GoAway's scan of the pending calls and its flag, where it would be
    /// sent, never answered and wait out its deadline (an hour here). The window is a few
    /// instructions wide, so callers race GoAway on fresh connections a number of times.
    /// </summary>
    [Fact]
    public async Task CallsMadeWhileGoAwayArrives_EachFailAtOnce_NoneWaitsForItsDeadline()
    {
        using TcpListener listener = RawMuxPeer.Listen();
        for (int round = 0; round < 20; round++)
        {
            Task<MuxClient> connecting = MuxClient.ConnectAsync(listener.LocalEndpoint, new MuxClientOptions { AutoReconnect = false, CallTimeout = TimeSpan.FromHours(1) });
            await using RawMuxPeer peer = await RawMuxPeer.AcceptAsync(listener);
            await peer.AnswerHelloAsync(maxConcurrentCalls: 100_000);
            await using MuxClient client = await connecting.WaitAsync(TestHost.Patience);
            IRaceService proxy = client.CreateProxy<IRaceService>();

            using var goAwaySent = new CancellationTokenSource();
            Task<List<Task<int>>>[] callers = Enumerable.Range(0, 2).Select(_ => Task.Run(() =>
            {
                // Until GoAway has been sent, and 50 more after it.
                var made = new List<Task<int>>();
                int madeAfterGoAway = 0;
                while (madeAfterGoAway < 50 && made.Count < 20_000)
                {
                    made.Add(proxy.Respond(made.Count, 0));
                    if (goAwaySent.IsCancellationRequested)
                    {
                        madeAfterGoAway++;
                    }
                }

                return made;
            })).ToArray();

            // Let some Requests reach the server, then tell it to serve none of them. The server
            // goes on reading, so no caller waits for outbound room.
            await peer.ExpectFrameAsync();
            _ = Task.Run(async () => { while (await peer.ReceiveFrameAsync() is not null) { } });
            await peer.SendAsync(WriteRawFrame(FrameType.GoAway, 0, new byte[ProtocolConstants.GoAwayPayloadSize]));
            goAwaySent.Cancel();

            foreach (Task<int> call in (await Task.WhenAll(callers).WaitAsync(TestHost.Patience)).SelectMany(made => made))
            {
                MuxConnectionException error = await Assert.ThrowsAsync<MuxConnectionException>(() => call).WaitAsync(TestHost.Patience);
                Assert.Equal(MuxCloseReason.GoAway, error.Reason);

                // Sent and overtaken by the GoAway: the server never ran it. Made after the client
                // read it: not sent, and not safe to retry on a client that does not reconnect.
                Assert.True(error.IsSafeToRetry || error.Message.Contains("does not reconnect", StringComparison.Ordinal), error.Message);
            }

            Assert.Equal(0, client.PendingCalls);
            peer.Close();
            await client.Completion.WaitAsync(TestHost.Patience);
        }
    }
}
