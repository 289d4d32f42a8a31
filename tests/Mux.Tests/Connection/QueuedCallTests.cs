using System.Net.Sockets;
using Microsoft.Extensions.Time.Testing;
using Mux.Protocol;
using Mux.Tests.Infrastructure;
using Mux.Tests.Protocol;
using static Mux.Tests.Infrastructure.RawServerFrames;

namespace Mux.Tests.Connection;

/// <summary>
/// Calls beyond the server's MaxConcurrentCallsPerConnection wait on the client, in a queue: the
/// oldest goes out first when an answer frees a slot; one cancelled or expired while it waits is
/// never sent (no Request, no Cancel); one the connection's end finds waiting fails as never run.
/// The server is hand-written, so the test sees every frame the client sends; the client's clock
/// is fake and moves only when the test moves it.
/// </summary>
public sealed class QueuedCallTests
{
    private static readonly TimeSpan CallTimeout = TimeSpan.FromSeconds(10);

    [Fact]
    public async Task CallsBeyondTheCap_GoOutOldestFirst_AsAnswersFreeSlots()
    {
        await using Scene scene = await Scene.StartAsync(maxConcurrentCalls: 2);
        Task<int>[] calls = [.. Enumerable.Range(0, 8).Select(i => scene.Add(i))];

        // Two go out at once; the other six wait on the client.
        uint[] ids = new uint[calls.Length];
        for (int i = 0; i < 2; i++)
        {
            ReceivedFrame request = await scene.Peer.ExpectFrameAsync();
            Assert.Equal(i, FirstArgument(request));
            ids[i] = request.CallId;
        }

        Assert.Equal(2, scene.Client.PendingCalls);

        // Each answer lets exactly the oldest waiting call out.
        for (int i = 2; i < calls.Length; i++)
        {
            await scene.Peer.SendAsync(Response(ids[i - 2], 100 + i - 2));
            ReceivedFrame request = await scene.Peer.ExpectFrameAsync();
            Assert.Equal(i, FirstArgument(request));
            ids[i] = request.CallId;
        }

        await scene.Peer.SendAsync(Response(ids[^2], 100 + calls.Length - 2));
        await scene.Peer.SendAsync(Response(ids[^1], 100 + calls.Length - 1));
        for (int i = 0; i < calls.Length; i++)
        {
            Assert.Equal(100 + i, await calls[i].WaitAsync(TestHost.Patience));
        }

        await scene.AssertCapWholeAsync(2);
    }

    [Fact]
    public async Task AQueuedCallCancelledByItsCaller_FailsAsCancelled_AndIsNeverSent()
    {
        await using Scene scene = await Scene.StartAsync(maxConcurrentCalls: 1);
        Task<int> running = scene.Add(1);
        ReceivedFrame first = await scene.Peer.ExpectFrameAsync();

        using var caller = new CancellationTokenSource();
        Task<int> cancelled = scene.Add(2, caller.Token);
        Task<int> after = scene.Add(3);
        await caller.CancelAsync();
        OperationCanceledException error = await Assert.ThrowsAnyAsync<OperationCanceledException>(() => cancelled.WaitAsync(TestHost.Patience));
        Assert.Equal(caller.Token, error.CancellationToken);

        // The answer frees the slot for the call after it: the cancelled one's Request never comes,
        // nor a Cancel for it.
        await scene.Peer.SendAsync(Response(first.CallId, 11));
        Assert.Equal(11, await running.WaitAsync(TestHost.Patience));
        ReceivedFrame next = await scene.Peer.ExpectFrameAsync();
        Assert.Equal((FrameType.Request, 3), (next.Type, FirstArgument(next)));
        await scene.Peer.SendAsync(Response(next.CallId, 33));
        Assert.Equal(33, await after.WaitAsync(TestHost.Patience));

        await scene.AssertNothingElseSentAsync();
        await scene.AssertCapWholeAsync(1);
    }

    [Fact]
    public async Task AQueuedCallWhoseDeadlinePasses_FailsWithTheSlotTimeout_AndIsNeverSent()
    {
        await using Scene scene = await Scene.StartAsync(maxConcurrentCalls: 1);
        Task<int> running = scene.Add(1); // Deadline at 10 s.
        ReceivedFrame first = await scene.Peer.ExpectFrameAsync();
        scene.Clock.Advance(TimeSpan.FromSeconds(2));
        Task<int> expiring = scene.Add(2); // Deadline at 12 s.
        scene.Clock.Advance(TimeSpan.FromSeconds(3));
        Task<int> after = scene.Add(3); // Deadline at 15 s.

        // At 12.5 s the running call and the first waiting one have timed out; the running call was
        // sent, so the server is told (Cancel) and its slot stays taken until the server answers.
        scene.Clock.Advance(TimeSpan.FromSeconds(7.5));
        TimeoutException expired = await Assert.ThrowsAsync<TimeoutException>(() => expiring.WaitAsync(TestHost.Patience));
        Assert.Equal("The Mux call to ITestService.Add did not complete within 10 s (MuxClientOptions.CallTimeout) (it waited for one of the server's MaxConcurrentCallsPerConnection slots all that time).", expired.Message);
        await Assert.ThrowsAsync<TimeoutException>(() => running.WaitAsync(TestHost.Patience));
        ReceivedFrame cancel = await scene.Peer.ExpectFrameAsync();
        Assert.Equal((FrameType.Cancel, first.CallId), (cancel.Type, cancel.CallId));
        Assert.False(after.IsCompleted);

        // The server's answer to the cancelled call frees the slot: the call after the expired one goes.
        await scene.Peer.SendAsync(Response(first.CallId, 0));
        ReceivedFrame next = await scene.Peer.ExpectFrameAsync();
        Assert.Equal((FrameType.Request, 3), (next.Type, FirstArgument(next)));
        await scene.Peer.SendAsync(Response(next.CallId, 33));
        Assert.Equal(33, await after.WaitAsync(TestHost.Patience));

        await scene.AssertNothingElseSentAsync();
        await scene.AssertCapWholeAsync(1);
    }

    [Fact]
    public async Task GoAway_FailsTheQueuedCallsAsNeverRun_SendsNoneOfThem_AndTheCallInFlightStillCompletes()
    {
        await using Scene scene = await Scene.StartAsync(maxConcurrentCalls: 1);
        Task<int> running = scene.Add(1);
        ReceivedFrame first = await scene.Peer.ExpectFrameAsync();
        Task<int>[] queued = [scene.Add(2), scene.Add(3), scene.Add(4)];

        await scene.Peer.SendAsync(GoAway(first.CallId));
        foreach (Task<int> call in queued)
        {
            MuxConnectionException notRun = await Assert.ThrowsAsync<MuxConnectionException>(() => call.WaitAsync(TestHost.Patience));
            Assert.True(notRun.IsSafeToRetry, notRun.Message);
            Assert.Equal(MuxCloseReason.GoAway, notRun.Reason);
            Assert.EndsWith("is shutting down (it sent GoAway); the call was not sent.", notRun.Message, StringComparison.Ordinal);
        }

        await scene.Peer.SendAsync(Response(first.CallId, 11));
        Assert.Equal(11, await running.WaitAsync(TestHost.Patience));

        // Drained, the client closes the connection: no Request came before its end.
        while (await scene.Peer.ReceiveFrameAsync() is { } frame)
        {
            Assert.NotEqual(FrameType.Request, frame.Type);
        }
    }

    [Fact]
    public async Task ALostConnection_FailsTheQueuedCallsAsNeverRun_AndTheCallInFlightAsLost()
    {
        await using Scene scene = await Scene.StartAsync(maxConcurrentCalls: 1);
        Task<int> running = scene.Add(1);
        await scene.Peer.ExpectFrameAsync();
        Task<int>[] queued = [scene.Add(2), scene.Add(3)];

        scene.Peer.Close();
        foreach (Task<int> call in queued)
        {
            MuxConnectionException notRun = await Assert.ThrowsAsync<MuxConnectionException>(() => call.WaitAsync(TestHost.Patience));
            Assert.True(notRun.IsSafeToRetry, notRun.Message);
            Assert.StartsWith("The call was not sent: ", notRun.Message, StringComparison.Ordinal);
        }

        MuxConnectionException lost = await Assert.ThrowsAsync<MuxConnectionException>(() => running.WaitAsync(TestHost.Patience));
        Assert.False(lost.IsSafeToRetry, lost.Message);
    }

    [Fact]
    public async Task ClientDispose_FailsTheQueuedCallsAsClosed_AndSendsNoneOfThem()
    {
        await using Scene scene = await Scene.StartAsync(maxConcurrentCalls: 1);
        Task<int> running = scene.Add(1);
        await scene.Peer.ExpectFrameAsync();
        Task<int>[] queued = [scene.Add(2), scene.Add(3)];

        Task disposing = scene.Client.DisposeAsync().AsTask();
        foreach (Task<int> call in queued)
        {
            // Never sent, but its client is closed for good: not safe to retry on it.
            MuxConnectionException closed = await Assert.ThrowsAsync<MuxConnectionException>(() => call.WaitAsync(TestHost.Patience));
            Assert.False(closed.IsSafeToRetry, closed.Message);
            Assert.EndsWith(" is closed.", closed.Message, StringComparison.Ordinal);
        }

        await Assert.ThrowsAsync<MuxConnectionException>(() => running.WaitAsync(TestHost.Patience));
        while (await scene.Peer.ReceiveFrameAsync() is { } frame)
        {
            Assert.NotEqual(FrameType.Request, frame.Type);
        }

        // The client's graceful close ends when its server closes too.
        scene.Peer.Close();
        await disposing.WaitAsync(TestHost.Patience);
    }

    [Fact]
    public async Task AnAnswerToACallStillWaitingForASlot_ClosesTheConnection_AndTheCallFailsAsNeverSent()
    {
        await using Scene scene = await Scene.StartAsync(maxConcurrentCalls: 1);
        Task<int> running = scene.Add(1);
        ReceivedFrame first = await scene.Peer.ExpectFrameAsync();
        Task<int> waiting = scene.Add(2);

        // Ids are handed out in order: the waiting call has the next one, which the server never saw.
        await scene.Peer.SendAsync(Response(first.CallId + 1, 22));
        MuxConnectionException notSent = await Assert.ThrowsAsync<MuxConnectionException>(() => waiting.WaitAsync(TestHost.Patience));
        Assert.True(notSent.IsSafeToRetry, notSent.Message);
        Assert.StartsWith("The call was not sent: ", notSent.Message, StringComparison.Ordinal);
        await Assert.ThrowsAsync<MuxConnectionException>(() => running.WaitAsync(TestHost.Patience));
        await scene.Peer.AssertClosedByOtherSideAsync();
    }

    [Fact]
    public async Task AQueuedCallWhoseRequestGoesInFragments_IsSentWhole_WhenASlotFrees()
    {
        // A Request over the fragment size waits in pooled segments, not in the call's own buffer.
        await using TestHost host = await TestHost.StartInMemoryAsync(
            new MuxServerOptions { MaxConcurrentCallsPerConnection = 1 },
            new MuxClientOptions { FragmentSize = 4096 });
        using var hold = new CancellationTokenSource();
        Task holding = host.Proxy.WaitForCancellation(hold.Token);
        await Hosts.WaitUntilAsync(() => host.Service.WaitingForCancellationNow == 1, "the first call to run");

        string text = new('x', 100_000);
        Task<string> large = host.Proxy.Echo(text);
        Task<string> small = host.Proxy.Echo("small");
        Assert.Equal(1, host.Client.PendingCalls); // The two wait.

        await hold.CancelAsync();
        await Assert.ThrowsAnyAsync<OperationCanceledException>(() => holding.WaitAsync(TestHost.Patience));
        Assert.Equal(text, await large.WaitAsync(TestHost.Patience));
        Assert.Equal("small", await small.WaitAsync(TestHost.Patience));
        await Hosts.WaitUntilAsync(() => host.Client.Connection.Outgoing.SlotAccount == (1, 0), "the slot to be free again");
    }

    /// <summary>A client connected to a hand-written server that allows <c>maxConcurrentCalls</c>.</summary>
    private sealed class Scene : IAsyncDisposable
    {
        private readonly TcpListener _listener;

        private Scene(TcpListener listener, FakeTimeProvider clock, RawMuxPeer peer, MuxClient client)
        {
            _listener = listener;
            Clock = clock;
            Peer = peer;
            Client = client;
        }

        public FakeTimeProvider Clock { get; }

        public RawMuxPeer Peer { get; }

        public MuxClient Client { get; }

        public static async Task<Scene> StartAsync(int maxConcurrentCalls)
        {
            var clock = new FakeTimeProvider();
            TcpListener listener = RawMuxPeer.Listen();
            var options = new MuxClientOptions
            {
                EndPoint = listener.LocalEndpoint,
                TimeProvider = clock,
                CallTimeout = CallTimeout,
                KeepAliveInterval = Timeout.InfiniteTimeSpan,
                AutoReconnect = false,
            };
            Task<MuxClient> connecting = MuxClient.ConnectAsync(options);
            RawMuxPeer peer = await RawMuxPeer.AcceptAsync(listener);
            await peer.AnswerHelloAsync(maxConcurrentCalls);
            return new Scene(listener, clock, peer, await connecting.WaitAsync(TestHost.Patience));
        }

        public Task<int> Add(int a, CancellationToken cancellationToken = default) =>
            Client.InvokeAsync<(int, int), int>(TestServiceIds.Add, (a, 0), cancellationToken).AsTask();

        /// <summary>A call made now is the next Request the server sees: nothing was sent between.</summary>
        public async Task AssertNothingElseSentAsync()
        {
            Task<int> probe = Add(99);
            ReceivedFrame request = await Peer.ExpectFrameAsync();
            Assert.Equal((FrameType.Request, 99), (request.Type, FirstArgument(request)));
            await Peer.SendAsync(Response(request.CallId, 99));
            Assert.Equal(99, await probe.WaitAsync(TestHost.Patience));
        }

        /// <summary>Every slot is free again and no call given up on is left (read at a quiet moment).</summary>
        public async Task AssertCapWholeAsync(int cap) =>
            await Hosts.WaitUntilAsync(() => Client.Connection.Outgoing.SlotAccount == (cap, 0) && Client.PendingCalls == 0, "every slot to be free again");

        public async ValueTask DisposeAsync()
        {
            // The peer goes first: a client that closes gracefully waits for the answers to its calls.
            try
            {
                Peer.Close();
            }
            catch (ObjectDisposedException)
            {
                // The test closed it already.
            }

            await Client.DisposeAsync().AsTask().WaitAsync(TestHost.Patience);
            _listener.Stop();
            _listener.Dispose();
        }
    }
}
