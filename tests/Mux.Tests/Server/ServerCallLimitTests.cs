using System.Net;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Time.Testing;
using Mux.Tests.Infrastructure;

namespace Mux.Tests.Server;

/// <summary>MuxServerOptions.MaxConcurrentCalls: one cap across every connection of a server. A call past it is refused with
/// Overloaded before its handler runs, and every way a call can end gives its permit back.</summary>
public class ServerCallLimitTests
{
    private const int Cap = 3;

    // Retries off: these tests look at what the server answers, not at what a client does with it.
    private static MuxClientOptions NoRetries() => new() { RetryBudget = null };

    [Fact]
    public async Task ACallPastTheCap_IsRefusedAsOverloaded_AndItsHandlerNeverRuns()
    {
        await using Scene scene = await Scene.StartAsync();
        Task<int>[] held = scene.HoldCap(firstId: 1);
        await scene.WaitHeldAsync(Cap);

        MuxRemoteException refused = await Assert.ThrowsAsync<MuxRemoteException>(() => scene.Proxy.Hold(100)).WaitAsync(TestHost.Patience);
        Assert.Equal(MuxStatusCode.Overloaded, refused.StatusCode);
        Assert.Contains("MaxConcurrentCalls", refused.Message, StringComparison.Ordinal);
        Assert.Contains("never ran", refused.Message, StringComparison.Ordinal);
        Assert.Equal(0, scene.Service.RunsOf(100));

        scene.Service.ReleaseHeld();
        Assert.Equal(new[] { 1, 2, 3 }, await Task.WhenAll(held).WaitAsync(TestHost.Patience));
        Assert.Equal(0, scene.Service.RunsOf(100));
        await scene.AssertRunsExactlyTheCapAsync(firstId: 10);
    }

    [Fact]
    public async Task CallsUnderTheCap_Run()
    {
        await using Scene scene = await Scene.StartAsync();
        for (int round = 0; round < 3; round++)
        {
            await scene.AssertRunsExactlyTheCapAsync(firstId: 10 * (round + 1));
        }
    }

    [Fact]
    public async Task TheCap_SpansConnections()
    {
        await using Scene scene = await Scene.StartAsync();
        await using MuxClient second = await MuxClient.ConnectAsync(scene.Server.LocalEndPoint!, NoRetries()).WaitAsync(TestHost.Patience);
        IAdmissionService secondProxy = second.CreateProxy<IAdmissionService>();

        Task<int> one = scene.Proxy.Hold(1);
        Task<int> two = secondProxy.Hold(2);
        Task<int> three = secondProxy.Hold(3);
        await scene.WaitHeldAsync(Cap);

        // Each connection runs fewer than its own limit (1000): only the server-wide cap refuses these.
        MuxRemoteException first = await Assert.ThrowsAsync<MuxRemoteException>(() => scene.Proxy.Hold(4)).WaitAsync(TestHost.Patience);
        MuxRemoteException other = await Assert.ThrowsAsync<MuxRemoteException>(() => secondProxy.Hold(5)).WaitAsync(TestHost.Patience);
        Assert.Equal(MuxStatusCode.Overloaded, first.StatusCode);
        Assert.Equal(MuxStatusCode.Overloaded, other.StatusCode);
        Assert.Equal(0, scene.Service.RunsOf(4) + scene.Service.RunsOf(5));

        scene.Service.ReleaseHeld();
        Assert.Equal(new[] { 1, 2, 3 }, await Task.WhenAll(one, two, three).WaitAsync(TestHost.Patience));
        await scene.AssertRunsExactlyTheCapAsync(firstId: 10);
    }

    [Fact]
    public async Task AHandlerThatThrows_GivesItsPermitBack()
    {
        await using Scene scene = await Scene.StartAsync();
        Task[] failing = [.. Enumerable.Range(1, Cap).Select(id => scene.Proxy.HoldThenThrow(id))];
        await scene.WaitHeldAsync(Cap);
        scene.Service.ReleaseHeld();
        foreach (Task call in failing)
        {
            MuxRemoteException failed = await Assert.ThrowsAsync<MuxRemoteException>(() => call).WaitAsync(TestHost.Patience);
            Assert.Equal(MuxStatusCode.HandlerFailed, failed.StatusCode);
        }

        await scene.AssertRunsExactlyTheCapAsync(firstId: 10);
    }

    [Fact]
    public async Task ACancelledCall_GivesItsPermitBack()
    {
        await using Scene scene = await Scene.StartAsync();
        using var cancel = new CancellationTokenSource();
        Task<int>[] cancelled = [.. Enumerable.Range(1, Cap).Select(id => scene.Proxy.Hold(id, cancel.Token))];
        await scene.WaitHeldAsync(Cap);
        await cancel.CancelAsync();
        foreach (Task<int> call in cancelled)
        {
            await Assert.ThrowsAnyAsync<OperationCanceledException>(() => call).WaitAsync(TestHost.Patience);
        }

        // The client's call ends at once; the server's handler ends when the Cancel reaches it.
        await scene.WaitHeldAsync(0);
        await scene.AssertRunsExactlyTheCapAsync(firstId: 10);
    }

    [Fact]
    public async Task ACallWhoseConnectionDrops_GivesItsPermitBack()
    {
        await using Scene scene = await Scene.StartAsync();
        MuxClient leaving = await MuxClient.ConnectAsync(
            scene.Server.LocalEndPoint!, new MuxClientOptions { RetryBudget = null, AutoReconnect = false }).WaitAsync(TestHost.Patience);
        IAdmissionService leavingProxy = leaving.CreateProxy<IAdmissionService>();
        Task<int>[] dropped = [.. Enumerable.Range(1, Cap).Select(id => leavingProxy.Hold(id))];
        await scene.WaitHeldAsync(Cap);

        await leaving.DisposeAsync().AsTask().WaitAsync(TestHost.Patience);
        foreach (Task<int> call in dropped)
        {
            await Assert.ThrowsAsync<MuxConnectionException>(() => call).WaitAsync(TestHost.Patience);
        }

        // The server cancels the handlers of a connection that closed; each gives its permit back as it ends.
        await scene.WaitHeldAsync(0);
        await scene.AssertRunsExactlyTheCapAsync(firstId: 10);
    }

    [Fact]
    public async Task AStreamingCall_HoldsItsPermitUntilItEnds_AndThenGivesItBack()
    {
        await using Scene scene = await Scene.StartAsync();
        var streams = new List<IAsyncEnumerator<int>>();
        for (int id = 1; id <= Cap; id++)
        {
            IAsyncEnumerator<int> stream = scene.Proxy.HoldStream(id).GetAsyncEnumerator();
            Assert.True(await stream.MoveNextAsync().AsTask().WaitAsync(TestHost.Patience));
            Assert.Equal(id, stream.Current);
            streams.Add(stream);
        }

        await scene.WaitHeldAsync(Cap);
        await using (IAsyncEnumerator<int> refused = scene.Proxy.HoldStream(100).GetAsyncEnumerator())
        {
            MuxRemoteException overloaded = await Assert.ThrowsAsync<MuxRemoteException>(() => refused.MoveNextAsync().AsTask())
                .WaitAsync(TestHost.Patience);
            Assert.Equal(MuxStatusCode.Overloaded, overloaded.StatusCode);
        }

        Assert.Equal(0, scene.Service.RunsOf(100));
        scene.Service.ReleaseHeld();
        foreach (IAsyncEnumerator<int> stream in streams)
        {
            Assert.True(await stream.MoveNextAsync().AsTask().WaitAsync(TestHost.Patience));
            Assert.False(await stream.MoveNextAsync().AsTask().WaitAsync(TestHost.Patience));
            await stream.DisposeAsync();
        }

        await scene.AssertRunsExactlyTheCapAsync(firstId: 10);
    }

    [Fact]
    public async Task AStreamTheCallerAbandons_GivesItsPermitBack()
    {
        await using Scene scene = await Scene.StartAsync();
        for (int id = 1; id <= Cap; id++)
        {
            await using IAsyncEnumerator<int> stream = scene.Proxy.HoldStream(id).GetAsyncEnumerator();
            Assert.True(await stream.MoveNextAsync().AsTask().WaitAsync(TestHost.Patience));
            await scene.WaitHeldAsync(1); // Disposing the enumerator mid-stream cancels the call on the server.
        }

        await scene.WaitHeldAsync(0);
        await scene.AssertRunsExactlyTheCapAsync(firstId: 10);
    }

    [Fact]
    public async Task Refusals_AreCountedByTheMeter_AndLoggedAtMostOnceASecondWithTheirCount()
    {
        var clock = new FakeTimeProvider(DateTimeOffset.UtcNow);
        var log = new CapturedLog();
        using var refusals = new Microsoft.Extensions.Diagnostics.Metrics.Testing.MetricCollector<long>(null, "Mux", "mux.server.calls.overloaded");
        await using Scene scene = await Scene.StartAsync(new MuxServerOptions
        {
            MaxConcurrentCalls = Cap,
            TimeProvider = clock,
            LoggerFactory = log,
            KeepAliveInterval = Timeout.InfiniteTimeSpan,
        });
        Task<int>[] held = scene.HoldCap(firstId: 1);
        await scene.WaitHeldAsync(Cap);

        for (int id = 100; id < 105; id++)
        {
            await Assert.ThrowsAsync<MuxRemoteException>(() => scene.Proxy.Hold(id)).WaitAsync(TestHost.Patience);
        }

        clock.Advance(TimeSpan.FromSeconds(1));
        await Assert.ThrowsAsync<MuxRemoteException>(() => scene.Proxy.Hold(105)).WaitAsync(TestHost.Patience);

        string[] lines = [.. log.Entries.Where(e => e.EventId.Name == "CallsOverloaded").Select(e => e.Message)];
        Assert.Equal(2, lines.Length);
        Assert.StartsWith("The server refused 1 calls since the last such line", lines[0], StringComparison.Ordinal);
        Assert.StartsWith("The server refused 5 calls since the last such line", lines[1], StringComparison.Ordinal);
        Assert.All(log.Entries.Where(e => e.EventId.Name == "CallsOverloaded"), e => Assert.Equal(LogLevel.Warning, e.Level));

        // The meter is process-wide: other tests' servers may add to it, never take from it.
        Assert.True(refusals.GetMeasurementSnapshot().Sum(m => m.Value) >= 6);
        scene.Service.ReleaseHeld();
        await Task.WhenAll(held).WaitAsync(TestHost.Patience);
    }

    [Theory]
    [InlineData(0)]
    [InlineData(-1)]
    public async Task ACapBelowOne_IsRefusedAtStart(int cap)
    {
        var server = new MuxServer(new MuxServerOptions { EndPoint = new IPEndPoint(IPAddress.Loopback, 0), MaxConcurrentCalls = cap });
        InvalidOperationException refused = await Assert.ThrowsAsync<InvalidOperationException>(() => server.StartAsync());
        Assert.Contains("MaxConcurrentCalls", refused.Message, StringComparison.Ordinal);
        await server.DisposeAsync();
    }

    private sealed class Scene : IAsyncDisposable
    {
        private Scene(MuxServer server, MuxClient client, AdmissionService service)
        {
            Server = server;
            Client = client;
            Service = service;
            Proxy = client.CreateProxy<IAdmissionService>();
        }

        public MuxServer Server { get; }

        public MuxClient Client { get; }

        public AdmissionService Service { get; }

        public IAdmissionService Proxy { get; }

        public static async Task<Scene> StartAsync(MuxServerOptions? options = null)
        {
            options ??= new MuxServerOptions { MaxConcurrentCalls = Cap };
            options.EndPoint = new IPEndPoint(IPAddress.Loopback, 0);
            var service = new AdmissionService();
            var server = new MuxServer(options);
            server.AddService<IAdmissionService>(service);
            await server.StartAsync().WaitAsync(TestHost.Patience);
            MuxClient client = await MuxClient.ConnectAsync(server.LocalEndPoint!, NoRetries()).WaitAsync(TestHost.Patience);
            return new Scene(server, client, service);
        }

        public Task<int>[] HoldCap(int firstId) => [.. Enumerable.Range(firstId, Cap).Select(id => Proxy.Hold(id))];

        public Task WaitHeldAsync(int count) => Hosts.WaitUntilAsync(() => Service.Held == count, $"{count} handlers to hold");

        /// <summary>The server runs Cap calls at once, and refuses one more (which never runs): no permit leaked, none extra.</summary>
        public async Task AssertRunsExactlyTheCapAsync(int firstId)
        {
            // A handler gives its permit back just after its last line: wait for that, not for the handler.
            await Hosts.WaitUntilAsync(() => Server.CallsRunningUnderCap == 0, "every permit to be given back");
            Task<int>[] held = HoldCap(firstId);
            await WaitHeldAsync(Cap);
            Assert.Equal(Cap, Server.CallsRunningUnderCap);
            int extra = firstId + Cap;
            MuxRemoteException refused = await Assert.ThrowsAsync<MuxRemoteException>(() => Proxy.Hold(extra)).WaitAsync(TestHost.Patience);
            Assert.Equal(MuxStatusCode.Overloaded, refused.StatusCode);
            Assert.Equal(0, Service.RunsOf(extra));
            Service.ReleaseHeld();
            Assert.Equal(Enumerable.Range(firstId, Cap), await Task.WhenAll(held).WaitAsync(TestHost.Patience));
        }

        public async ValueTask DisposeAsync()
        {
            Service.ReleaseHeld();
            await Client.DisposeAsync().AsTask().WaitAsync(TestHost.Patience);
            using var deadline = new CancellationTokenSource(TestHost.Patience);
            await Server.StopAsync(deadline.Token).WaitAsync(TestHost.Patience + TestHost.Patience);
        }
    }
}
