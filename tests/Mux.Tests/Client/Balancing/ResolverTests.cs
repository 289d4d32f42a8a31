using System.Net;
using Mux.Tests.Infrastructure;

namespace Mux.Tests.Client.Balancing;

public sealed class ResolverTests
{
    /// <summary>A resolver whose answer the test sets.</summary>
    private sealed class ListResolver : IMuxEndPointResolver
    {
        private volatile EndPoint[] _endPoints = [];

        public void Set(params EndPoint[] endPoints) => _endPoints = endPoints;

        public ValueTask<IReadOnlyList<EndPoint>> ResolveAsync(CancellationToken cancellationToken) => new(_endPoints);
    }

    /// <summary>The cluster's client options, with its instances named by <paramref name="resolver"/>
    /// (asked every <paramref name="interval"/>) instead of a fixed list.</summary>
    private static MuxClientOptions ResolvedBy(BalanceCluster cluster, IMuxEndPointResolver resolver, TimeSpan interval)
    {
        MuxClientOptions options = cluster.ClientOptions();
        options.EndPoints.Clear();
        options.EndPointResolver = resolver;
        options.ResolveInterval = interval;
        return options;
    }

    [Fact]
    public async Task InstancesTheResolverAddsAndRemoves_TakeAndStopTakingCalls_WithoutFailingAny()
    {
        await using BalanceCluster cluster = await BalanceCluster.StartAsync(3);
        var resolver = new ListResolver();
        resolver.Set(cluster.EndPoints[0], cluster.EndPoints[1]);
        MuxClientOptions options = ResolvedBy(cluster, resolver, TimeSpan.FromMilliseconds(50));
        await using MuxClient client = await MuxClient.ConnectAsync(options).WaitAsync(TestHost.Patience);

        await using var load = new CallerLoad(client.CreateProxy<IBalanceProbe>(), callers: 100);
        await Hosts.WaitUntilAsync(() => cluster.Probes[0].Served >= 1_000 && cluster.Probes[1].Served >= 1_000, "the first two instances run calls");
        Assert.Equal(0, cluster.Probes[2].Served);

        resolver.Set(cluster.EndPoints[1], cluster.EndPoints[2]);
        await Hosts.WaitUntilAsync(() => client.GetEndPointStatistics().Select(e => e.EndPoint).ToHashSet().SetEquals([cluster.EndPoints[1], cluster.EndPoints[2]]), "the client uses the new set");
        await Hosts.WaitUntilAsync(() => cluster.Probes[2].Served >= 1_000, "the added instance runs calls");

        // The client closes the removed instance's connection once the calls sent to it before the
        // change have finished (waited for: on a slow machine one of them may still be under way
        // after many calls to the others); none follow.
        await Hosts.WaitUntilAsync(() => cluster.ActiveConnections(0) == 0, "the removed instance's connection is closed");
        int removedServed = cluster.Probes[0].Served;
        await Hosts.WaitUntilAsync(() => cluster.Probes[2].Served >= 2_000, "the added instance runs more calls");
        await load.StopAsync();

        // No call failed, ran twice or succeeded without running. (Started always equalled
        // succeeded plus failed: each caller adds to one of them for every call it starts.)
        Assert.Empty(load.Failures);
        cluster.AssertNoCallRanTwice_AndEverySuccessRanOnce(load);
        Assert.Equal(load.Succeeded, cluster.TotalServed);
        Assert.Equal(removedServed, cluster.Probes[0].Served);
    }

    /// <summary>A resolver that also says when its answer changed.</summary>
    private sealed class SignallingResolver : IMuxEndPointResolver
    {
        private volatile EndPoint[] _endPoints = [];
        private volatile TaskCompletionSource _changed = new(TaskCreationOptions.RunContinuationsAsynchronously);

        private int _resolves;

        public int Resolves => Volatile.Read(ref _resolves);

        public void Set(params EndPoint[] endPoints)
        {
            _endPoints = endPoints;
            _changed.TrySetResult();
        }

        public ValueTask<IReadOnlyList<EndPoint>> ResolveAsync(CancellationToken cancellationToken)
        {
            Interlocked.Increment(ref _resolves);
            _changed = new(TaskCreationOptions.RunContinuationsAsynchronously);
            return new(_endPoints);
        }

        public ValueTask WaitForChangeAsync(CancellationToken cancellationToken) => new(_changed.Task.WaitAsync(cancellationToken));
    }

    [Fact]
    public async Task AResolverThatSignalsAChange_IsAskedAgainAtOnce_NotAtTheNextInterval()
    {
        await using BalanceCluster cluster = await BalanceCluster.StartAsync(2);
        var resolver = new SignallingResolver();
        resolver.Set(cluster.EndPoints[0]);
        MuxClientOptions options = ResolvedBy(cluster, resolver, TimeSpan.FromHours(1));
        await using MuxClient client = await MuxClient.ConnectAsync(options).WaitAsync(TestHost.Patience);
        Assert.Equal([cluster.EndPoints[0]], client.GetEndPointStatistics().Select(e => e.EndPoint));

        resolver.Set(cluster.EndPoints[0], cluster.EndPoints[1]);

        await Hosts.WaitUntilAsync(() => client.GetEndPointStatistics().Count == 2, "the client uses the changed set");
        Assert.Equal(2, resolver.Resolves);
    }

    [Fact]
    public async Task AResolverThatFindsNothingYet_MakesCallsWait_UntilItDoes()
    {
        await using BalanceCluster cluster = await BalanceCluster.StartAsync(1);
        var resolver = new ListResolver();
        MuxClientOptions options = ResolvedBy(cluster, resolver, TimeSpan.FromMilliseconds(50));
        await using MuxClient client = MuxClient.Create(options);
        IBalanceProbe proxy = client.CreateProxy<IBalanceProbe>();

        Task<int> call = proxy.Serve(42).AsTask();
        Assert.False(call.IsCompleted);
        resolver.Set(cluster.EndPoints[0]);

        Assert.Equal(42, await call.WaitAsync(TestHost.Patience));
        Assert.Equal(MuxClientState.Connected, client.State);
    }

    [Fact]
    public async Task WithAutoReconnectOff_AnInstanceWhoseConnectionIsLost_GetsNoCalls_AndTheResolversNextAnswerThatNamesItConnectsItAgain()
    {
        await using BalanceCluster cluster = await BalanceCluster.StartAsync(2);
        var resolver = new ListResolver();
        resolver.Set(cluster.EndPoints[0], cluster.EndPoints[1]);
        MuxClientOptions options = ResolvedBy(cluster, resolver, TimeSpan.FromMilliseconds(50));
        options.AutoReconnect = false;
        await using MuxClient client = await MuxClient.ConnectAsync(options).WaitAsync(TestHost.Patience);
        await Hosts.WaitUntilAsync(() => client.GetEndPointStatistics().All(e => e.State == MuxClientState.Connected), "both instances are connected");
        IBalanceProbe proxy = client.CreateProxy<IBalanceProbe>();

        // Instance 0 goes down: its connection closes for good, and calls go to instance 1 alone.
        await cluster.KillAsync(0);
        await Hosts.WaitUntilAsync(() => client.GetEndPointStatistics().Any(e => e.State == MuxClientState.Closed), "the lost instance is closed");
        for (int i = 1; i <= 20; i++)
        {
            Assert.Equal(i, await proxy.Serve(i).AsTask().WaitAsync(TestHost.Patience));
        }

        Assert.Equal(20, cluster.Probes[1].Served);

        // It comes back on its address, which the resolver still names: the client does not
        // reconnect it by itself, but its next ask connects it as it would a new instance. Before,
        // the closed instance was kept as the resolver's answer's match, and never used again.
        await cluster.RestartAsync(0);
        await Hosts.WaitUntilAsync(
            () => client.GetEndPointStatistics().Count(e => e.State == MuxClientState.Connected) == 2,
            "the instance is connected again");
        int value = 100;
        while (cluster.Probes[0].Served == 0)
        {
            Assert.True(value < 10_000, "No call reached the instance that came back.");
            Assert.Equal(value, await proxy.Serve(value).AsTask().WaitAsync(TestHost.Patience));
            value++;
        }

        Assert.Equal(2, client.GetEndPointStatistics().Count);
    }

    /// <summary>A resolver with a fixed answer that counts how often it is asked.</summary>
    private sealed class CountingResolver(EndPoint[] endPoints) : IMuxEndPointResolver
    {
        private int _asks;

        public int Asks => Volatile.Read(ref _asks);

        public ValueTask<IReadOnlyList<EndPoint>> ResolveAsync(CancellationToken cancellationToken)
        {
            Interlocked.Increment(ref _asks);
            return new(endPoints);
        }
    }

    [Fact]
    public async Task WithAutoReconnectOff_AnInstanceWhoseConnectionIsLost_HasTheResolverAskedSoon_NotAtTheNextInterval()
    {
        await using BalanceCluster cluster = await BalanceCluster.StartAsync(2);
        var resolver = new CountingResolver([cluster.EndPoints[0], cluster.EndPoints[1]]);
        MuxClientOptions options = ResolvedBy(cluster, resolver, TimeSpan.FromHours(1));
        options.AutoReconnect = false;
        await using MuxClient client = await MuxClient.ConnectAsync(options).WaitAsync(TestHost.Patience);
        await Hosts.WaitUntilAsync(() => client.GetEndPointStatistics().All(e => e.State == MuxClientState.Connected), "both instances are connected");
        int asks = resolver.Asks;

        // Instance 0's connection is lost, for good: only the resolver's next answer, which still names
        // it, connects it again. Before, that answer came at the interval (an hour here): a lost
        // connection asked for one early only when its instance reconnected by itself.
        await cluster.KillAsync(0);
        await Hosts.WaitUntilAsync(() => resolver.Asks > asks, "the resolver is asked again");
    }
}
