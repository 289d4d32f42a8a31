using System.Net;
using Microsoft.Extensions.Logging;
using Mux.Tests.Infrastructure;

namespace Mux.Tests.Client.Balancing;

/// <summary>
/// An <see cref="IMuxEndPointResolver"/> that throws, one that finds no instance, and every instance
/// down then one back: calls wait (or fail) as documented, the client recovers by itself, and the
/// resolver is asked on a schedule, never in a loop. The resolve loop and the reconnect backoff run
/// on a fake clock, so each test counts the rounds exactly: nothing happens while the clock stands
/// still, and each step of the clock brings one round.
/// </summary>
public sealed class ResolverFaultTests
{
    private static readonly TimeSpan Patience = TestHost.Patience;

    private static readonly TimeSpan InitialDelay = TimeSpan.FromSeconds(1);
    private static readonly TimeSpan MaxDelay = TimeSpan.FromSeconds(4);

    /// <summary>A resolver whose answer (a list, or an exception) the test sets; counts the asks.</summary>
    private sealed class ScriptedResolver : IMuxEndPointResolver
    {
        private volatile Func<IReadOnlyList<EndPoint>> _answer = () => [];
        private int _resolves;

        public int Resolves => Volatile.Read(ref _resolves);

        public void Answer(params EndPoint[] endPoints) => _answer = () => endPoints;

        public void Throw(string message) => _answer = () => throw new InvalidOperationException(message);

        /// <summary>Answers <paramref name="endPoint"/> and a null after it (a resolver with a bug).</summary>
        public void AnswerWithANull(EndPoint endPoint) => _answer = () => [endPoint, null!];

        public ValueTask<IReadOnlyList<EndPoint>> ResolveAsync(CancellationToken cancellationToken)
        {
            Interlocked.Increment(ref _resolves);
            return new(_answer()); // A throw escapes synchronously, as from a resolver that is not async.
        }
    }

    /// <summary>Resolve loop and reconnect backoff on <paramref name="clock"/>; a call timeout far
    /// beyond what any test moves the clock, so calls wait for as long as the test needs.</summary>
    private static MuxClientOptions Options(ScriptedResolver resolver, DelayWatchingClock clock, TimeSpan resolveInterval) => new()
    {
        EndPointResolver = resolver,
        ResolveInterval = resolveInterval,
        ReconnectInitialDelay = InitialDelay,
        ReconnectMaxDelay = MaxDelay,
        CallTimeout = TimeSpan.FromHours(1),
        TimeProvider = clock,
    };

    /// <summary>Waits until the resolver has been asked <paramref name="resolves"/> times and the
    /// loop has armed the <paramref name="timers"/>-th of its timers (those <paramref name="isLoops"/>
    /// picks out by due time) for the next round; then the resolver has been asked exactly that often.</summary>
    private static async Task WaitForRoundAsync(ScriptedResolver resolver, int resolves, DelayWatchingClock clock, Func<TimeSpan, bool> isLoops, int timers)
    {
        await Hosts.WaitUntilAsync(
            () => resolver.Resolves > resolves || (resolver.Resolves == resolves && clock.DueTimes.Count(isLoops) >= timers),
            $"the resolver has been asked {resolves} time(s) and the client waits for the next round");
        Assert.Equal(resolves, resolver.Resolves);
    }

    /// <summary>A backoff step of the resolve loop (the only timers due this soon while no instance is known).</summary>
    private static bool IsBackoff(TimeSpan due) => due <= MaxDelay;

    public static TheoryData<string> Faults => ["throws", "finds nothing"];

    private static void Fail(ScriptedResolver resolver, string fault)
    {
        if (fault == "throws")
        {
            resolver.Throw("discovery is down");
        }
        else
        {
            resolver.Answer();
        }
    }

    [Theory]
    [MemberData(nameof(Faults))]
    public async Task AResolverThatFails_BeforeItFoundAnyInstance_IsAskedAgainOnTheReconnectBackoff_AndTheWaitingCallSucceedsOnceItAnswers(string fault)
    {
        await using BalanceCluster cluster = await BalanceCluster.StartAsync(1);
        var clock = new DelayWatchingClock();
        var resolver = new ScriptedResolver();
        Fail(resolver, fault);
        TimeSpan interval = TimeSpan.FromMinutes(1);
        await using MuxClient client = MuxClient.Create(Options(resolver, clock, interval));
        Task<int> call = client.CreateProxy<IBalanceProbe>().Serve(42).AsTask();

        // Each wait is the reconnect backoff (up to 20% shorter): 1 s, 2 s, 4 s, then 4 s again.
        // The clock stands still between the steps, and each step brings exactly one more ask.
        TimeSpan[] waits = [InitialDelay, 2 * InitialDelay, MaxDelay, MaxDelay];
        await WaitForRoundAsync(resolver, 1, clock, IsBackoff, 1);
        for (int i = 0; i < waits.Length; i++)
        {
            Assert.InRange(clock.DueTimes.Last(IsBackoff), waits[i] * 0.8, waits[i]);
            clock.Advance(waits[i]);
            await WaitForRoundAsync(resolver, i + 2, clock, IsBackoff, i + 2);
        }

        Assert.False(call.IsCompleted);
        Assert.Equal(MuxClientState.Connecting, client.State);

        resolver.Answer(cluster.EndPoints[0]);
        clock.Advance(MaxDelay);
        Assert.Equal(42, await call.WaitAsync(Patience));
        Assert.Equal(MuxClientState.Connected, client.State);
        Assert.Equal(1, cluster.Probes[0].Served);

        // With an instance found, the next ask is a whole ResolveInterval away.
        await Hosts.WaitUntilAsync(() => clock.DueTimes.Contains(interval), "the client waits a ResolveInterval for the next round");
        Assert.Equal(waits.Length + 2, resolver.Resolves);
    }

    [Theory]
    [MemberData(nameof(Faults))]
    public async Task AResolverThatFails_AfterItFoundInstances_LeavesThemServingCalls_AndIsAskedAgainOnlyEveryResolveInterval(string fault)
    {
        await using BalanceCluster cluster = await BalanceCluster.StartAsync(1);
        var clock = new DelayWatchingClock();
        var resolver = new ScriptedResolver();
        resolver.Answer(cluster.EndPoints[0]);
        TimeSpan interval = TimeSpan.FromSeconds(10);
        await using MuxClient client = await MuxClient.ConnectAsync(Options(resolver, clock, interval)).WaitAsync(Patience);
        IBalanceProbe proxy = client.CreateProxy<IBalanceProbe>();
        Assert.Equal(1, await proxy.Serve(1).AsTask().WaitAsync(Patience));
        await WaitForRoundAsync(resolver, 1, clock, due => due == interval, 1);

        Fail(resolver, fault);
        for (int round = 2; round <= 4; round++)
        {
            clock.Advance(interval);

            // The failed ask waits a whole interval for the next one, never a backoff step.
            await WaitForRoundAsync(resolver, round, clock, due => due == interval, round);
            Assert.DoesNotContain(clock.DueTimes, IsBackoff);
            Assert.Equal([cluster.EndPoints[0]], client.GetEndPointStatistics().Select(e => e.EndPoint));
            Assert.Equal(round, await proxy.Serve(round).AsTask().WaitAsync(Patience));
        }

        Assert.Equal(MuxClientState.Connected, client.State);
    }

    [Fact]
    public async Task AllInstancesDown_CallsWait_TheResolverIsAskedOnce_NotInALoop_AndTheFirstInstanceBackServesThem()
    {
        await using BalanceCluster cluster = await BalanceCluster.StartAsync(2);
        var clock = new DelayWatchingClock();
        var resolver = new ScriptedResolver();
        resolver.Answer(cluster.EndPoints[0], cluster.EndPoints[1]);
        TimeSpan interval = TimeSpan.FromMinutes(1);
        await using MuxClient client = await MuxClient.ConnectAsync(Options(resolver, clock, interval)).WaitAsync(Patience);
        IBalanceProbe proxy = client.CreateProxy<IBalanceProbe>();
        await Hosts.WaitUntilAsync(() => client.GetEndPointStatistics().All(e => e.State == MuxClientState.Connected), "both instances are connected");
        await WaitForRoundAsync(resolver, 1, clock, due => due == interval, 1);
        int timersBefore = clock.DueTimes.Length;

        await cluster.KillAsync(0);
        await cluster.KillAsync(1);
        await Hosts.WaitUntilAsync(() => client.State == MuxClientState.Reconnecting, "the client has lost both instances");
        Task<int> call = proxy.Serve(7).AsTask();

        // Each instance failed its first reconnect and waits out its backoff, and the resolve loop
        // waits the least time between early rounds: three timers, all on the standing clock.
        await Hosts.WaitUntilAsync(() => resolver.Resolves > 1 || clock.DueTimes.Skip(timersBefore).Count(due => due <= InitialDelay) >= 3, "both instances and the resolve loop wait");
        Assert.Equal(1, resolver.Resolves);
        Assert.False(call.IsCompleted);

        // One instance comes back: the next reconnect attempt finds it, and the waiting call runs there.
        await cluster.RestartAsync(1);
        clock.Advance(InitialDelay);
        Assert.Equal(7, await call.WaitAsync(Patience));
        Assert.Equal(1, cluster.Probes[1].Served);
        Assert.Equal(MuxClientState.Connected, client.State);

        // The losses brought one early round (the resolver still lists both); the clock has moved
        // by the least wait between early rounds, so no other round could come.
        await WaitForRoundAsync(resolver, 2, clock, due => due == interval, 2);
        Assert.Equal([MuxClientState.Reconnecting, MuxClientState.Connected], client.GetEndPointStatistics().Select(e => e.State));
    }

    [Theory]
    [InlineData("throws", "No instance is known: resolving it failed: discovery is down")]
    [InlineData("finds nothing", "No instance is known: the resolver has found none.")]
    public async Task ACallThatFindsNoInstanceInTime_FailsWithWhatTheResolverSaid(string fault, string why)
    {
        var clock = new DelayWatchingClock();
        var resolver = new ScriptedResolver();
        Fail(resolver, fault);
        MuxClientOptions options = Options(resolver, clock, TimeSpan.FromMinutes(1));
        options.CallTimeout = TimeSpan.FromMilliseconds(300);
        await using MuxClient client = MuxClient.Create(options);
        await WaitForRoundAsync(resolver, 1, clock, IsBackoff, 1);

        Task<int> call = client.CreateProxy<IBalanceProbe>().Serve(1).AsTask();
        clock.Advance(options.CallTimeout); // Whichever clock the call's deadline follows, it passes.

        var failed = await Assert.ThrowsAsync<MuxConnectionException>(() => call.WaitAsync(Patience));
        Assert.True(failed.IsSafeToRetry);
        Assert.Contains("was available within 300 ms (MuxClientOptions.CallTimeout); the call was not sent. " + why, failed.Message, StringComparison.Ordinal);
        if (fault == "throws")
        {
            Assert.Equal("discovery is down", Assert.IsType<InvalidOperationException>(failed.InnerException).Message);
        }
        else
        {
            Assert.Null(failed.InnerException);
        }
    }

    [Fact]
    public async Task AnAnswerWithANullEndPoint_IsAFailureOfTheResolver_AndConnectsNoInstance()
    {
        await using BalanceCluster cluster = await BalanceCluster.StartAsync(1);
        var clock = new DelayWatchingClock();
        var resolver = new ScriptedResolver();
        resolver.AnswerWithANull(cluster.EndPoints[0]);
        MuxClientOptions options = Options(resolver, clock, TimeSpan.FromMinutes(1));
        options.CallTimeout = TimeSpan.FromMilliseconds(300);
        MuxClient client = MuxClient.Create(options);
        try
        {
            await WaitForRoundAsync(resolver, 1, clock, IsBackoff, 1);

            Task<int> call = client.CreateProxy<IBalanceProbe>().Serve(1).AsTask();
            clock.Advance(options.CallTimeout);

            // Before, the null failed the set's update halfway ("Object reference not set to an
            // instance of an object."), after it had started connecting to the instance before it,
            // which no set then held: that connection was used by nothing and closed by nothing, not
            // even the client's disposal, and each round opened another.
            var failed = await Assert.ThrowsAsync<MuxConnectionException>(() => call.WaitAsync(Patience));
            Assert.Contains("No instance is known: resolving it failed: The resolver's answer has a null endpoint (at index 1).", failed.Message, StringComparison.Ordinal);
            Assert.Empty(client.GetEndPointStatistics());
        }
        finally
        {
            await client.DisposeAsync().AsTask().WaitAsync(Patience);
        }

        Assert.Equal(0, cluster.ActiveConnections(0));
    }

    /// <summary>A resolver that answers once, then waits for the client to go and reports the
    /// cancellation as a failure of its own (as one that wraps every error of its lookup does).</summary>
    private sealed class WrappingResolver(EndPoint endPoint) : IMuxEndPointResolver
    {
        private int _resolves;

        public int Resolves => Volatile.Read(ref _resolves);

        public async ValueTask<IReadOnlyList<EndPoint>> ResolveAsync(CancellationToken cancellationToken)
        {
            if (Interlocked.Increment(ref _resolves) == 1)
            {
                return [endPoint];
            }

            try
            {
                await Task.Delay(Timeout.Infinite, cancellationToken);
                return [endPoint];
            }
            catch (OperationCanceledException ex)
            {
                throw new InvalidOperationException("The lookup failed.", ex);
            }
        }
    }

    [Fact]
    public async Task AResolverThatFailsItsOwnWayWhenTheClientIsDisposed_FailsNotTheDisposal_WhichClosesEveryInstance()
    {
        await using BalanceCluster cluster = await BalanceCluster.StartAsync(1);
        var resolver = new WrappingResolver(cluster.EndPoints[0]);
        MuxClient client = await MuxClient.ConnectAsync(new MuxClientOptions
        {
            EndPointResolver = resolver,
            ResolveInterval = TimeSpan.FromMilliseconds(20),
        }).WaitAsync(Patience);
        Assert.Equal(1, await client.CreateProxy<IBalanceProbe>().Serve(1).AsTask().WaitAsync(Patience));
        await Hosts.WaitUntilAsync(() => resolver.Resolves >= 2, "the second ask is under way");

        await client.DisposeAsync().AsTask().WaitAsync(Patience);

        Assert.Equal(MuxClientState.Closed, client.State);
        Assert.True(client.Completion.IsCompletedSuccessfully);
        await Hosts.WaitUntilAsync(() => cluster.ActiveConnections(0) == 0, "the instance's connection is closed");
    }

    /// <summary>A resolver that answers once, then ignores its token: its second ask returns only
    /// when the test releases it, with another instance. Reports when the client next waits for a
    /// change, which it does right after it has taken (or dropped) an answer.</summary>
    private sealed class DeafResolver(EndPoint first, EndPoint late) : IMuxEndPointResolver
    {
        private readonly TaskCompletionSource _release = new(TaskCreationOptions.RunContinuationsAsynchronously);
        private int _resolves;

        public int Resolves => Volatile.Read(ref _resolves);

        public TaskCompletionSource AnswerTaken { get; } = new(TaskCreationOptions.RunContinuationsAsynchronously);

        public void Release() => _release.TrySetResult();

        public async ValueTask<IReadOnlyList<EndPoint>> ResolveAsync(CancellationToken cancellationToken)
        {
            if (Interlocked.Increment(ref _resolves) == 1)
            {
                return [first];
            }

            await _release.Task;
            return [first, late];
        }

        public ValueTask WaitForChangeAsync(CancellationToken cancellationToken)
        {
            if (Resolves > 1)
            {
                AnswerTaken.TrySetResult();
            }

            return new(Task.Delay(Timeout.Infinite, cancellationToken));
        }
    }

    [Fact]
    public async Task AResolverThatIgnoresItsCancellation_HoldsUpTheDisposalNoLongerThanConnectTimeout_AndItsLateAnswerConnectsNothing()
    {
        await using BalanceCluster cluster = await BalanceCluster.StartAsync(2);
        var resolver = new DeafResolver(cluster.EndPoints[0], cluster.EndPoints[1]);
        var log = new CapturedLog();
        MuxClient client = MuxClient.Create(new MuxClientOptions
        {
            LoggerFactory = log,
            EndPointResolver = resolver,
            ResolveInterval = TimeSpan.FromMilliseconds(20),
            ConnectTimeout = TimeSpan.FromSeconds(1),
            CallTimeout = Patience,
        });
        try
        {
            Assert.Equal(1, await client.CreateProxy<IBalanceProbe>().Serve(1).AsTask().WaitAsync(Patience));
            await Hosts.WaitUntilAsync(() => resolver.Resolves >= 2, "the second ask is under way");

            // Before, the disposal waited for the resolve loop, and so for an ask that never ends.
            await client.DisposeAsync().AsTask().WaitAsync(Patience);

            Assert.Equal(MuxClientState.Closed, client.State);
            Assert.Contains(log.Entries, entry => entry.EventId.Id == 33 && entry.Level == LogLevel.Warning && entry.Message.Contains("MuxClientOptions.ConnectTimeout", StringComparison.Ordinal));
            await Hosts.WaitUntilAsync(() => cluster.ActiveConnections(0) == 0, "the instance's connection is closed");
        }
        finally
        {
            resolver.Release();
        }

        // The late answer names a new instance: the disposed client takes no notice of it.
        await resolver.AnswerTaken.Task.WaitAsync(Patience);
        Assert.Single(client.GetEndPointStatistics());
        Assert.Equal(0, cluster.ActiveConnections(1));
    }
}
