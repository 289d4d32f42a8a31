using System.Net;
using System.Net.Sockets;
using Microsoft.Extensions.Logging;
using Mux.Client;
using Mux.Connection;
using Mux.Protocol;
using Mux.Tests.Infrastructure;
using Mux.Tests.Protocol;

namespace Mux.Tests.Client.Balancing;

/// <summary>
/// An instance the resolver stops naming takes no new call, and finishes the calls it already has
/// before its connections close: every connection it holds, the ones retired after a GoAway
/// included. A call that picked it just before the removal is not lost either: it goes to another
/// instance. The instances are hand-written servers (<see cref="RawMuxPeer"/>), so each test
/// decides when an answer comes.
/// </summary>
public sealed class RemovedInstanceTests
{
    private static readonly TimeSpan Patience = TestHost.Patience;

    /// <summary>A resolver whose answer the test sets; a change is asked for at once.</summary>
    private sealed class ChangingResolver(EndPoint first) : IMuxEndPointResolver
    {
        private volatile EndPoint[] _endPoints = [first];
        private volatile TaskCompletionSource _changed = new(TaskCreationOptions.RunContinuationsAsynchronously);

        public void Set(params EndPoint[] endPoints)
        {
            _endPoints = endPoints;
            _changed.TrySetResult();
        }

        public ValueTask<IReadOnlyList<EndPoint>> ResolveAsync(CancellationToken cancellationToken)
        {
            _changed = new(TaskCreationOptions.RunContinuationsAsynchronously);
            return new(_endPoints);
        }

        public ValueTask WaitForChangeAsync(CancellationToken cancellationToken) => new(_changed.Task.WaitAsync(cancellationToken));
    }

    private static MuxClientOptions Options(IMuxEndPointResolver resolver) => new()
    {
        EndPointResolver = resolver,
        ResolveInterval = TimeSpan.FromHours(1), // Only the resolver's own signal brings a change.
        CallTimeout = Patience,
        KeepAliveInterval = Timeout.InfiniteTimeSpan,
    };

    /// <summary>Accepts one connection on <paramref name="listener"/> and completes its handshake.</summary>
    private static async Task<RawMuxPeer> AcceptAsync(TcpListener listener)
    {
        RawMuxPeer peer = await RawMuxPeer.AcceptAsync(listener);
        await peer.AnswerHelloAsync();
        return peer;
    }

    /// <summary>As <paramref name="listener"/>'s instance: accepts a connection and reads until the
    /// client closes it, answering nothing.</summary>
    private static async Task StandByAsync(TcpListener listener)
    {
        await using RawMuxPeer peer = await AcceptAsync(listener);
        await peer.AssertClosedByOtherSideAsync();
    }

    /// <summary>As <paramref name="listener"/>'s instance: accepts a connection, answers the first
    /// Add it receives with <paramref name="value"/> (after setting <paramref name="received"/>),
    /// and reads until the client closes.</summary>
    private static async Task ServeOneAddAsync(TcpListener listener, int value, TaskCompletionSource received)
    {
        await using RawMuxPeer peer = await AcceptAsync(listener);
        ReceivedFrame request = await peer.ExpectFrameAsync();
        Assert.Equal(FrameType.Request, request.Type);
        received.TrySetResult();
        await peer.SendAsync(RawServerFrames.Response(request.CallId, value));
        await peer.AssertClosedByOtherSideAsync();
    }

    /// <summary>A client whose one instance, A, owes it an answer on a retired connection: A's server
    /// sent GoAway carrying the id of <see cref="Promised"/>, a later call retired that connection,
    /// and the client reconnected to A (<see cref="Second"/>, idle now). B stands by for the
    /// resolver's next answer.</summary>
    private sealed class PromiseOnARetiredConnection : IAsyncDisposable
    {
        public required TcpListener A { get; init; }

        public required TcpListener B { get; init; }

        public required ChangingResolver Resolver { get; init; }

        public required MuxClient Client { get; init; }

        public required RawMuxPeer First { get; init; }

        public required RawMuxPeer Second { get; init; }

        public required Task<int> Promised { get; init; }

        public required uint PromisedId { get; init; }

        public Task StandingBy { get; private set; } = Task.CompletedTask;

        public static async Task<PromiseOnARetiredConnection> StartAsync()
        {
            TcpListener a = RawMuxPeer.Listen();
            TcpListener b = RawMuxPeer.Listen();
            var resolver = new ChangingResolver(a.LocalEndpoint);
            Task<MuxClient> connecting = MuxClient.ConnectAsync(Options(resolver));
            RawMuxPeer first = await AcceptAsync(a).WaitAsync(Patience);
            MuxClient client = await connecting.WaitAsync(Patience);
            ITestService proxy = client.CreateProxy<ITestService>();

            // A's server will answer this call: its GoAway carries the call's id.
            Task<int> promised = proxy.Add(1, 2).AsTask();
            ReceivedFrame request = await first.ExpectFrameAsync();
            await first.SendAsync(RawServerFrames.GoAway(request.CallId));
            ClientConnection goingAway = client.Connection;
            await Hosts.WaitUntilAsync(() => goingAway.Outgoing.IsGoingAway, "the client to read the GoAway");

            // The next call retires that connection and waits for A's next one, which it is sent on.
            Task<int> later = proxy.Add(3, 4).AsTask();
            RawMuxPeer second = await AcceptAsync(a).WaitAsync(Patience);
            ReceivedFrame laterRequest = await second.ExpectFrameAsync();
            await second.SendAsync(RawServerFrames.Response(laterRequest.CallId, 7));
            Assert.Equal(7, await later.WaitAsync(Patience));
            return new() { A = a, B = b, Resolver = resolver, Client = client, First = first, Second = second, Promised = promised, PromisedId = request.CallId };
        }

        /// <summary>The resolver drops A for B; A's idle connection closes at once.</summary>
        public async Task RemoveAAsync()
        {
            StandingBy = StandByAsync(B);
            Resolver.Set(B.LocalEndpoint);
            await Second.AssertClosedByOtherSideAsync();
        }

        public async ValueTask DisposeAsync()
        {
            await Client.DisposeAsync().AsTask().WaitAsync(Patience);
            First.Dispose();
            Second.Dispose();
            await StandingBy.WaitAsync(Patience);
            A.Dispose();
            B.Dispose();
        }
    }

    [Fact]
    public async Task AnInstanceRemovedAfterItsServerSentGoAway_AndTheClientReconnected_StillGetsTheAnswerItPromised_ThenCloses()
    {
        await using PromiseOnARetiredConnection scene = await PromiseOnARetiredConnection.StartAsync();
        await scene.RemoveAAsync();

        // The connection A's server promised an answer on waits for it, and closes once it has it.
        await scene.First.SendAsync(RawServerFrames.Response(scene.PromisedId, 3));
        Assert.Equal(3, await scene.Promised.WaitAsync(Patience));
        await scene.First.AssertClosedByOtherSideAsync();
        Assert.Equal([scene.B.LocalEndpoint], scene.Client.GetEndPointStatistics().Select(instance => instance.EndPoint));
    }

    [Fact]
    public async Task ACallAnInstancePromisedOnARetiredConnection_IsCountedPending_WhileTheInstanceIsUsed_AndOnceItIsRemoved()
    {
        await using PromiseOnARetiredConnection scene = await PromiseOnARetiredConnection.StartAsync();
        Assert.Equal(1, scene.Client.PendingCalls);
        Assert.Equal(1, scene.Client.GetEndPointStatistics().Single().PendingCalls);

        await scene.RemoveAAsync();
        Assert.Equal(1, scene.Client.PendingCalls);

        await scene.First.SendAsync(RawServerFrames.Response(scene.PromisedId, 3));
        Assert.Equal(3, await scene.Promised.WaitAsync(Patience));
        await Hosts.WaitUntilAsync(() => scene.Client.PendingCalls == 0, "the answered call to count no more");
    }

    [Fact]
    public async Task ARemovedInstanceThatNeverAnswers_KeepsItsCallUntilTheCallsOwnDeadline_ThenCloses()
    {
        using TcpListener a = RawMuxPeer.Listen();
        using TcpListener b = RawMuxPeer.Listen();
        var resolver = new ChangingResolver(a.LocalEndpoint);
        var clock = new DelayWatchingClock();
        MuxClientOptions options = Options(resolver);
        options.TimeProvider = clock;
        options.CallTimeout = TimeSpan.FromMinutes(1);
        options.ReconnectInitialDelay = TimeSpan.FromSeconds(1);
        Task<MuxClient> connecting = MuxClient.ConnectAsync(options);
        RawMuxPeer onA = await AcceptAsync(a).WaitAsync(Patience);
        MuxClient client = await connecting.WaitAsync(Patience);
        Task standingBy = Task.CompletedTask;
        try
        {
            TimeSpan ownTimeout = TimeSpan.FromMinutes(10);
            ITestService proxy = client.CreateProxy<ITestService>(new MuxCallOptions { Timeout = ownTimeout });
            Task<int> call = proxy.Add(1, 2).AsTask();
            Assert.Equal(FrameType.Request, (await onA.ExpectFrameAsync()).Type);
            standingBy = StandByAsync(b);
            resolver.Set(b.LocalEndpoint);

            // The resolver is asked again a ReconnectInitialDelay after its change.
            await Hosts.WaitUntilAsync(() => clock.DueTimes.Contains(options.ReconnectInitialDelay), "the client to wait for its next ask");
            clock.Advance(options.ReconnectInitialDelay);
            await Hosts.WaitUntilAsync(
                () => client.GetEndPointStatistics() is [{ State: MuxClientState.Connected } only] && only.EndPoint.Equals(b.LocalEndpoint),
                "the client to use B alone");

            // Past CallTimeout the call still waits on the removed instance: its own deadline is later.
            clock.Advance(options.CallTimeout * 2);
            Assert.Equal(1, client.PendingCalls);

            // At that deadline it fails with its own timeout, and the connection closes.
            clock.Advance(ownTimeout);
            TimeoutException timedOut = await Assert.ThrowsAsync<TimeoutException>(() => call.WaitAsync(Patience));
            Assert.Contains("its own Timeout", timedOut.Message, StringComparison.Ordinal);
            await onA.AssertClosedByOtherSideAsync();
            await Hosts.WaitUntilAsync(() => client.PendingCalls == 0, "the removed instance to count no call");
        }
        finally
        {
            // A graceful close reads until its server closes too, for a time on a clock that stands
            // still: the servers close their ends, so that the client's dispose ends.
            onA.Dispose();
            await client.DisposeAsync().AsTask().WaitAsync(Patience);
            await standingBy.WaitAsync(Patience);
        }
    }

    /// <summary>A clock that holds the first call made on the connection to <paramref name="held"/>
    /// where it starts that connection's expiry scan: after the call has picked the connection, before
    /// it is in the connection's table of pending calls.</summary>
    private sealed class HoldingClock(string held) : TimeProvider
    {
        private readonly ManualResetEventSlim _release = new();
        private int _armed = 1;

        /// <summary>The calls of the connection the held call is on, once it is held.</summary>
        public TaskCompletionSource<OutgoingCalls> Holding { get; } = new(TaskCreationOptions.RunContinuationsAsynchronously);

        public void Release() => _release.Set();

        public override ITimer CreateTimer(TimerCallback callback, object? state, TimeSpan dueTime, TimeSpan period)
        {
            if (state is OutgoingCalls calls && calls.Connection.Name == held && Interlocked.Exchange(ref _armed, 0) == 1)
            {
                Holding.TrySetResult(calls);
                _release.Wait(Patience);
            }

            return base.CreateTimer(callback, state, dueTime, period);
        }
    }

    /// <summary>Runs what <see cref="Arm"/> was given, once, where the client logs that a removed
    /// instance's connection has no call left: after the drain has seen it empty, before it closes it.</summary>
    private sealed class DrainedHook : LogHook
    {
        private Action? _onDrained;

        public void Arm(Action onDrained) => _onDrained = onDrained;

        public override void Log<TState>(LogLevel logLevel, EventId eventId, TState state, Exception? exception, Func<TState, Exception?, string> formatter)
        {
            if (eventId.Name == "RemovedInstanceDrained")
            {
                Interlocked.Exchange(ref _onDrained, null)?.Invoke();
            }
        }
    }

    /// <summary>Reads what <paramref name="peer"/> receives until the client closes, and counts its
    /// Requests (<paramref name="received"/> is set at the first); answers none.</summary>
    private static async Task<int> CountRequestsAsync(RawMuxPeer peer, TaskCompletionSource received)
    {
        int requests = 0;
        while (await peer.ReceiveFrameAsync() is { } frame)
        {
            if (frame.Type == FrameType.Request)
            {
                requests++;
                received.TrySetResult();
            }
        }

        return requests;
    }

    [Fact]
    public async Task ACallThatPickedAnInstanceAsItIsRemoved_AndReachesItAfterTheDrainFoundItEmpty_IsSentToAnotherInstance()
    {
        using TcpListener a = RawMuxPeer.Listen();
        using TcpListener b = RawMuxPeer.Listen();
        var resolver = new ChangingResolver(a.LocalEndpoint);
        var clock = new HoldingClock(a.LocalEndpoint.ToString()!);
        var log = new DrainedHook();
        MuxClientOptions options = Options(resolver);
        options.TimeProvider = clock;
        options.LoggerFactory = log;
        Task<MuxClient> connecting = MuxClient.ConnectAsync(options);
        await using RawMuxPeer onA = await AcceptAsync(a).WaitAsync(Patience);
        await using MuxClient client = await connecting.WaitAsync(Patience);
        ITestService proxy = client.CreateProxy<ITestService>();
        var reachedA = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        Task<int> requestsToA = CountRequestsAsync(onA, reachedA);

        // The call picks A (the only instance) and is held before it enters A's table.
        Task<int> call = Task.Run(() => proxy.Add(5, 6).AsTask());
        await clock.Holding.Task.WaitAsync(Patience);

        // The resolver drops A, whose drain finds no call. Between that and the close, the held call
        // goes on, and the close waits until its Request has reached A (which never answers) or B.
        var reachedB = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        log.Arm(() =>
        {
            clock.Release();
            SpinWait.SpinUntil(() => reachedA.Task.IsCompleted || reachedB.Task.IsCompleted, Patience);
        });
        Task servingB = ServeOneAddAsync(b, 12, reachedB);
        resolver.Set(b.LocalEndpoint);

        // It goes to B, unsent on A.
        Assert.Equal(12, await call.WaitAsync(Patience));
        await client.DisposeAsync().AsTask().WaitAsync(Patience);
        Assert.Equal(0, await requestsToA.WaitAsync(Patience));
        await servingB.WaitAsync(Patience);
    }
}
