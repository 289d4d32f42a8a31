using System.Collections.Concurrent;
using System.Net;
using System.Net.Sockets;
using Mux.Tests.Infrastructure;

namespace Mux.Tests.Client;

/// <summary>The contract of the reconnect tests: each server instance counts what it ran.</summary>
[MuxService]
public interface IReconnectProbe
{
    /// <summary>Returns <paramref name="value"/>; counts the call on the server that ran it.</summary>
    ValueTask<int> Serve(int value);

    /// <summary>Waits until the test releases held calls, then returns <paramref name="value"/>.</summary>
    Task<int> Hold(int value);
}

/// <summary>One server instance of <see cref="IReconnectProbe"/>.</summary>
public sealed class ReconnectProbe : IReconnectProbe
{
    private readonly TaskCompletionSource _release = new(TaskCreationOptions.RunContinuationsAsynchronously);
    private int _served;
    private int _held;

    public int Served => Volatile.Read(ref _served);

    /// <summary>How many times this instance ran Serve or Hold, by value (the tests give every call its own).</summary>
    public ConcurrentDictionary<int, int> Runs { get; } = new();

    public int Held => Volatile.Read(ref _held);

    public void Release() => _release.TrySetResult();

    public ValueTask<int> Serve(int value)
    {
        Interlocked.Increment(ref _served);
        Runs.AddOrUpdate(value, 1, static (_, runs) => runs + 1);
        return new(value);
    }

    public async Task<int> Hold(int value)
    {
        Runs.AddOrUpdate(value, 1, static (_, runs) => runs + 1);
        Interlocked.Increment(ref _held);
        await _release.Task.ConfigureAwait(false);
        return value;
    }
}

public sealed class ReconnectTests
{
    // Short backoff so a restarted server is found promptly; the defaults are tested on their own.
    private static MuxClientOptions FastReconnect(TimeSpan? callTimeout = null) => new()
    {
        ReconnectInitialDelay = TimeSpan.FromMilliseconds(20),
        ReconnectMaxDelay = TimeSpan.FromMilliseconds(200),
        CallTimeout = callTimeout ?? TestHost.Patience,
    };

    [Fact]
    public async Task AServerKilledAndRestartedOnTheSamePort_100CallersResume_AndEveryCallEndsOnce()
    {
        (MuxServer first, ReconnectProbe firstProbe) = await StartServerAsync(new IPEndPoint(IPAddress.Loopback, 0));
        var endPoint = (IPEndPoint)first.LocalEndPoint!;
        await using MuxClient client = await MuxClient.ConnectAsync(endPoint, FastReconnect());
        IReconnectProbe proxy = client.CreateProxy<IReconnectProbe>();

        int succeeded = 0, connectionFailures = 0;
        var succeededValues = new ConcurrentQueue<int>();
        var unexpected = new ConcurrentQueue<Exception>();
        using var stop = new CancellationTokenSource();

        async Task CallerAsync(int caller)
        {
            for (int i = 0; !stop.IsCancellationRequested; i++)
            {
                int value = (caller * 1_000_000) + i;
                try
                {
                    int result = await proxy.Serve(value);
                    Assert.Equal(value, result);
                    succeededValues.Enqueue(value);
                    Interlocked.Increment(ref succeeded);
                }
                catch (MuxConnectionException)
                {
                    Interlocked.Increment(ref connectionFailures);
                }
                catch (Exception ex)
                {
                    unexpected.Enqueue(ex);
                }
            }
        }

        Task[] callers = Enumerable.Range(0, 100).Select(c => Task.Run(() => CallerAsync(c))).ToArray();
        await Hosts.WaitUntilAsync(() => firstProbe.Served >= 1_000, "the first server has served 1,000 calls");

        // Calls the first server is running when it is killed (they wait for a release that never
        // comes): it ran them and will never answer. Without them, whether any call is caught
        // between running and answering would be left to timing.
        Task<int>[] held = [.. Enumerable.Range(1, 10).Select(i => proxy.Hold(-i))];
        await Hosts.WaitUntilAsync(() => firstProbe.Held == held.Length, "the first server runs the held calls");

        // Kill: the server drops every connection without draining.
        await first.StopAsync(new CancellationToken(canceled: true)).WaitAsync(TestHost.Patience);
        await Hosts.WaitUntilAsync(() => client.State != MuxClientState.Connected, "the client notices the lost connection");
        (MuxServer second, ReconnectProbe secondProbe) = await StartServerAsync(endPoint);
        await using (second)
        {
            try
            {
                await Hosts.WaitUntilAsync(() => secondProbe.Served >= 1_000, "the restarted server has served 1,000 calls");
                stop.Cancel();
                await Task.WhenAll(callers).WaitAsync(TestHost.Patience);

                // Every call ended: the callers finished, each call as a success or a connection
                // failure. (The count of calls started always equalled successes plus failures, whatever
                // the client did: each caller adds to one or the other for every call it starts.)
                Assert.Empty(unexpected);

                // Only calls in flight on the killed connection may fail: at most one per caller.
                Assert.InRange(connectionFailures, 0, 100);

                // Every call ended once (each caller's value is new): no call ran twice on the two
                // servers together, and each success ran exactly once. A call the first server ran
                // without answering is one of the reported failures, never sent again in silence.
                var runs = new Dictionary<int, int>(firstProbe.Runs);
                foreach ((int value, int count) in secondProbe.Runs)
                {
                    runs[value] = runs.GetValueOrDefault(value) + count;
                }

                int[] ranTwice = [.. runs.Where(run => run.Value > 1).Select(run => run.Key).Order()];
                Assert.True(ranTwice.Length == 0, $"{ranTwice.Length} calls ran more than once on the servers, e.g. value {ranTwice.FirstOrDefault()}.");
                int[] neverRan = [.. succeededValues.Where(value => !runs.ContainsKey(value)).Order()];
                Assert.True(neverRan.Length == 0, $"{neverRan.Length} calls succeeded that no server ran, e.g. value {neverRan.FirstOrDefault()}.");
                int served = firstProbe.Served + secondProbe.Served;
                Assert.InRange(served, succeeded, succeeded + connectionFailures);

                // The held calls, which the killed server ran, each failed once, as not safe to retry.
                foreach (Task<int> call in held)
                {
                    MuxConnectionException lost = await Assert.ThrowsAsync<MuxConnectionException>(() => call).WaitAsync(TestHost.Patience);
                    Assert.False(lost.IsSafeToRetry, "A call the killed server ran is reported safe to retry.");
                }

                Assert.Equal(0, secondProbe.Held);

                // One connection at a time: the restarted server saw exactly one.
                Assert.Equal(1, second.ConnectionsAccepted);
                Assert.Equal(MuxClientState.Connected, client.State);
            }
            finally
            {
                // Lets every held handler return, so that neither server's stop waits for one.
                firstProbe.Release();
                secondProbe.Release();
            }
        }
    }

    [Fact]
    public async Task CallsMadeWhileTheServerIsDown_WaitAndSucceedOnTheRestartedServer()
    {
        (MuxServer first, _) = await StartServerAsync(new IPEndPoint(IPAddress.Loopback, 0));
        var endPoint = (IPEndPoint)first.LocalEndPoint!;
        await using MuxClient client = await MuxClient.ConnectAsync(endPoint, FastReconnect());
        IReconnectProbe proxy = client.CreateProxy<IReconnectProbe>();
        Assert.Equal(1, await proxy.Serve(1));

        await first.StopAsync(new CancellationToken(canceled: true)).WaitAsync(TestHost.Patience);
        await Hosts.WaitUntilAsync(() => client.State == MuxClientState.Reconnecting, "the client is reconnecting");
        Task<int>[] waiting = Enumerable.Range(0, 10).Select(i => proxy.Serve(i).AsTask()).ToArray();
        Assert.All(waiting, call => Assert.False(call.IsCompleted));

        (MuxServer second, ReconnectProbe secondProbe) = await StartServerAsync(endPoint);
        await using (second)
        {
            Assert.Equal(Enumerable.Range(0, 10), await Task.WhenAll(waiting).WaitAsync(TestHost.Patience));
            Assert.Equal(10, secondProbe.Served);
        }
    }

    [Fact]
    public async Task AServerThatSendsGoAway_LetsItsCallFinish_WhileNewCallsGoToTheNextServer()
    {
        (MuxServer first, ReconnectProbe firstProbe) = await StartServerAsync(new IPEndPoint(IPAddress.Loopback, 0));
        var endPoint = (IPEndPoint)first.LocalEndPoint!;
        await using MuxClient client = await MuxClient.ConnectAsync(endPoint, FastReconnect());
        IReconnectProbe proxy = client.CreateProxy<IReconnectProbe>();
        Task<int> held = proxy.Hold(7);
        await Hosts.WaitUntilAsync(() => firstProbe.Held == 1, "the call runs on the first server");

        // A graceful stop: GoAway, then the first server drains its call (its listener is closed).
        Task stopping = first.StopAsync(new CancellationTokenSource(TestHost.Patience).Token);
        await Hosts.WaitUntilAsync(() => client.Connection.Outgoing.IsGoingAway, "the client has the GoAway");
        (MuxServer second, ReconnectProbe secondProbe) = await StartServerAsync(endPoint);
        await using (second)
        {
            Assert.Equal(5, await proxy.Serve(5).AsTask().WaitAsync(TestHost.Patience));
            Assert.Equal(1, secondProbe.Served);
            Assert.Equal(0, firstProbe.Served);
            Assert.False(held.IsCompleted);

            firstProbe.Release();
            Assert.Equal(7, await held.WaitAsync(TestHost.Patience));
            await stopping.WaitAsync(TestHost.Patience);
            Assert.Equal(MuxClientState.Connected, client.State);
        }
    }

    [Fact]
    public async Task StateChanged_ReportsTheLostConnection_TheReconnect_AndTheClose_InOrder()
    {
        (MuxServer first, _) = await StartServerAsync(new IPEndPoint(IPAddress.Loopback, 0));
        var endPoint = (IPEndPoint)first.LocalEndPoint!;
        MuxClient client = await MuxClient.ConnectAsync(endPoint, FastReconnect());
        var changes = new ConcurrentQueue<MuxClientStateChangedEventArgs>();
        client.StateChanged += (sender, change) =>
        {
            Assert.Same(client, sender);
            changes.Enqueue(change);
        };

        await first.StopAsync(new CancellationToken(canceled: true)).WaitAsync(TestHost.Patience);
        await Hosts.WaitUntilAsync(() => !changes.IsEmpty, "the client reports the lost connection");
        (MuxServer second, _) = await StartServerAsync(endPoint);
        await using (second)
        {
            await Hosts.WaitUntilAsync(() => changes.Count == 2, "the client reports the new connection");
            await client.DisposeAsync();
        }

        Assert.Equal(
            [(MuxClientState.Connected, MuxClientState.Reconnecting), (MuxClientState.Reconnecting, MuxClientState.Connected), (MuxClientState.Connected, MuxClientState.Closed)],
            changes.Select(c => (c.PreviousState, c.State)));
        MuxConnectionException lost = Assert.IsType<MuxConnectionException>(changes.First().Error);
        Assert.Contains(lost.Reason, new[] { MuxCloseReason.GoAway, MuxCloseReason.RemoteClosed }); // A stop sends GoAway first, then closes.
        Assert.Null(changes.Last().Error);
        await client.Completion.WaitAsync(TestHost.Patience);
    }

    [Fact]
    public async Task WithAutoReconnectOff_ALostConnectionClosesTheClient_AndCallsFailAtOnce()
    {
        (MuxServer server, _) = await StartServerAsync(new IPEndPoint(IPAddress.Loopback, 0));
        await using MuxClient client = await MuxClient.ConnectAsync(server.LocalEndPoint!, new MuxClientOptions { AutoReconnect = false });

        await server.StopAsync(new CancellationToken(canceled: true)).WaitAsync(TestHost.Patience);
        await client.Completion.WaitAsync(TestHost.Patience);

        Assert.Equal(MuxClientState.Closed, client.State);
        var failed = await Assert.ThrowsAsync<MuxConnectionException>(() => client.CreateProxy<IReconnectProbe>().Serve(1).AsTask().WaitAsync(TestHost.Patience));
        var doesNotWait = await Assert.ThrowsAsync<MuxConnectionException>(() => client.CreateProxy<IReconnectProbe>(new MuxCallOptions { WaitForConnection = false }).Serve(1).AsTask().WaitAsync(TestHost.Patience));
        foreach (MuxConnectionException call in new[] { failed, doesNotWait })
        {
            // Why the client closed, and not safe to retry: it will never send a call again (before,
            // "the call was not sent", safe to retry, had a caller that retries on it loop forever).
            Assert.Contains(call.Reason, new[] { MuxCloseReason.GoAway, MuxCloseReason.RemoteClosed }); // A stop sends GoAway first, then closes.
            Assert.Equal(client.CloseReason, call.Reason);
            Assert.False(call.IsSafeToRetry);
            Assert.DoesNotContain("not sent", call.Message, StringComparison.Ordinal);
        }
    }

    [Fact]
    public async Task Create_ReturnsBeforeTheServerIsUp_AndTheFirstCallSucceedsOnceItIs()
    {
        IPEndPoint endPoint = FreeLoopbackEndPoint();
        MuxClientOptions options = FastReconnect();
        options.EndPoint = endPoint;
        await using MuxClient client = MuxClient.Create(options);
        Assert.Equal(MuxClientState.Connecting, client.State);
        Assert.False(client.IsConnected);
        Task<int> first = client.CreateProxy<IReconnectProbe>().Serve(42).AsTask();

        (MuxServer server, ReconnectProbe probe) = await StartServerAsync(endPoint);
        await using (server)
        {
            Assert.Equal(42, await first.WaitAsync(TestHost.Patience));
            Assert.Equal(1, probe.Served);
            Assert.True(client.IsConnected);
            Assert.Equal(endPoint, client.RemoteEndPoint);
        }
    }

    [Fact]
    public async Task ACallThatFindsNoConnectionWithinItsTimeout_FailsWithWhyTheClientCouldNotConnect()
    {
        var log = new CapturedLog();
        MuxClientOptions options = FastReconnect(callTimeout: TimeSpan.FromMilliseconds(300));
        options.EndPoint = FreeLoopbackEndPoint();
        options.LoggerFactory = log;
        await using MuxClient client = MuxClient.Create(options);

        // The message tells why only once an attempt has failed; on a slow machine the first one
        // may still be under way when 300 ms have passed, so the call is made after it failed.
        await Hosts.WaitUntilAsync(() => log.Entries.Any(e => e.EventId.Name == "ConnectFailed"), "the client's first connect attempt to fail");
        var failed = await Assert.ThrowsAsync<MuxConnectionException>(() => client.CreateProxy<IReconnectProbe>().Serve(1).AsTask().WaitAsync(TestHost.Patience));

        Assert.True(failed.IsSafeToRetry);
        Assert.Contains("within 300 ms (MuxClientOptions.CallTimeout); the call was not sent.", failed.Message, StringComparison.Ordinal);
        Assert.Contains("Could not connect to the Mux server at", failed.Message, StringComparison.Ordinal);
        Assert.Equal(MuxClientState.Connecting, client.State);
    }

    [Fact]
    public async Task ACallWaitingForTheConnection_IsCancelledByItsToken()
    {
        MuxClientOptions options = FastReconnect();
        options.EndPoint = FreeLoopbackEndPoint();
        await using MuxClient client = MuxClient.Create(options);
        using var cancel = new CancellationTokenSource();
        Task<int> call = client.InvokeAsync<ValueTuple<int>, int>(1, new ValueTuple<int>(1), cancel.Token).AsTask();

        cancel.Cancel();

        await Assert.ThrowsAnyAsync<OperationCanceledException>(() => call.WaitAsync(TestHost.Patience));
    }

    [Fact]
    public async Task DisposingAClientThatIsStillConnecting_FailsTheWaitingCalls()
    {
        MuxClientOptions options = FastReconnect();
        options.EndPoint = FreeLoopbackEndPoint();
        MuxClient client = MuxClient.Create(options);
        Task<int> call = client.CreateProxy<IReconnectProbe>().Serve(1).AsTask();

        await client.DisposeAsync().AsTask().WaitAsync(TestHost.Patience);

        var failed = await Assert.ThrowsAsync<MuxConnectionException>(() => call.WaitAsync(TestHost.Patience));
        Assert.Contains("is closed", failed.Message, StringComparison.Ordinal);
        Assert.Equal(MuxClientState.Closed, client.State);
    }

    [Theory]
    [InlineData(0, 1000, "MuxClientOptions.ReconnectInitialDelay is 00:00:00; it must be positive")]
    [InlineData(1000, 500, "MuxClientOptions.ReconnectMaxDelay (00:00:00.5000000) is shorter than ReconnectInitialDelay (00:00:01)")]
    public void ReconnectDelays_AreValidated_WithAMessageThatSaysWhatToFix(int initialMs, int maxMs, string message)
    {
        var options = new MuxClientOptions
        {
            EndPoint = new IPEndPoint(IPAddress.Loopback, 1),
            ReconnectInitialDelay = TimeSpan.FromMilliseconds(initialMs),
            ReconnectMaxDelay = TimeSpan.FromMilliseconds(maxMs),
        };

        var invalid = Assert.Throws<InvalidOperationException>(() => MuxClient.Create(options));
        Assert.StartsWith(message, invalid.Message, StringComparison.Ordinal);
    }

    private static async Task<(MuxServer Server, ReconnectProbe Probe)> StartServerAsync(IPEndPoint endPoint)
    {
        var probe = new ReconnectProbe();
        var server = new MuxServer(new MuxServerOptions { EndPoint = endPoint });
        server.AddService<IReconnectProbe>(probe);
        await server.StartAsync();
        return (server, probe);
    }

    /// <summary>A loopback port that was free a moment ago: nothing listens there.</summary>
    internal static IPEndPoint FreeLoopbackEndPoint()
    {
        using var probe = new Socket(AddressFamily.InterNetwork, SocketType.Stream, ProtocolType.Tcp);
        probe.Bind(new IPEndPoint(IPAddress.Loopback, 0));
        return (IPEndPoint)probe.LocalEndPoint!;
    }
}
