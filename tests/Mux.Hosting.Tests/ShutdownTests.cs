using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Logging;

namespace Mux.Hosting.Tests;

public sealed class ShutdownTests
{
    [Fact]
    public async Task StoppingTheServerHostDrainsTheCallsInFlight()
    {
        TestHost server = await TestHost.StartServerAsync();
        await using (server)
        {
            // Without reconnecting, new calls fail rather than wait for a server that is going away.
            await using TestHost client = await TestHost.StartClientAsync(server.ServerEndPoint, new() { ["Mux:Client:AutoReconnect"] = "false" });
            IHostingTestService proxy = client.Services.GetRequiredService<IHostingTestService>();

            Task<int>[] inFlight = Enumerable.Range(1, 5).Select(proxy.WaitForGate).ToArray();
            await TestHost.WaitUntilAsync(() => server.Tracker.Waiting == 5, "five calls are in their handlers");

            Task stopping = server.StopAsync();

            // Once the client has seen the server's GoAway, new calls fail at once...
            await FailsSoonAsync(() => proxy.Add(1, 1).AsTask());

            // ...while the calls in flight keep running, and the stop waits for them.
            Assert.False(stopping.IsCompleted);
            Assert.All(inFlight, call => Assert.False(call.IsCompleted));

            server.Tracker.Gate.SetResult();
            int[] results = await Task.WhenAll(inFlight).WaitAsync(TestHost.Patience);
            Assert.Equal([1, 2, 3, 4, 5], results);
            await stopping;

            await Assert.ThrowsAsync<MuxConnectionException>(() => proxy.Add(1, 2).AsTask().WaitAsync(TestHost.Patience));
            Assert.Equal(server.Tracker.Created.Order(), server.Tracker.Disposed.Order());
        }
    }

    [Fact]
    public async Task CallsStillRunningAtTheShutdownTimeoutFailWithoutHanging()
    {
        TestHost server = await TestHost.StartServerAsync(configure: b =>
            b.Services.Configure<HostOptions>(o => o.ShutdownTimeout = TimeSpan.FromMilliseconds(300)));
        await using (server)
        {
            await using TestHost client = await TestHost.StartClientAsync(server.ServerEndPoint);
            IHostingTestService proxy = client.Services.GetRequiredService<IHostingTestService>();
            Task call = proxy.WaitForCancellation(1);
            await TestHost.WaitUntilAsync(() => server.Tracker.Waiting == 1, "the call is in its handler");

            await server.StopAsync();

            // The handler was told (its token fired) and its scope disposed; the caller got a connection error.
            // The handler records the cancellation on its own thread, which may run after StopAsync returns.
            await TestHost.WaitUntilAsync(() => !server.Tracker.Canceled.IsEmpty, "the handler sees its token fire");
            Assert.Equal([1], server.Tracker.Canceled);
            await TestHost.WaitUntilAsync(() => server.Tracker.Disposed.Count == 1, "the call's scope is disposed");
            await Assert.ThrowsAsync<MuxConnectionException>(() => call.WaitAsync(TestHost.Patience));
        }
    }

    [Fact]
    public async Task AServerHostDisposedWithoutAStop_DrainsTheCallsInFlight_BeforeDisposingTheSingletonServingThem()
    {
        // Not through MuxServer, which the test must not resolve: DI disposes what it made, and
        // a MuxServer resolved from it would be disposed first, as made last, which hides the
        // order of the rest. So a socket file, known beforehand, rather than port 0.
        string path = Path.Combine(Path.GetTempPath(), $"mux-{Guid.NewGuid():N}.sock");
        var endPoint = new System.Net.Sockets.UnixDomainSocketEndPoint(path);
        TestHost server = await TestHost.StartServerAsync(ServiceLifetime.Singleton, configure: b => b.Services.AddMuxServer(o => o.EndPoint = endPoint));
        // Without reconnecting, a call fails at once once the server's GoAway has arrived.
        await using MuxClient client = MuxClient.Create(new MuxClientOptions { EndPoint = endPoint, AutoReconnect = false });
        IHostingTestService proxy = client.CreateProxy<IHostingTestService>();
        Task<int> call = proxy.WaitForGate(7);
        await TestHost.WaitUntilAsync(() => server.Tracker.Waiting == 1, "the call is in its handler");

        // Disposed without StopAsync (a host in a using block that never ran): the server's
        // disposal drains, waiting for the call at the gate, so whichever of the two DI disposes
        // first stays so until the gate opens.
        Task disposing = TestHost.DisposeHostAsync(server.Host).AsTask();
        bool disposedWhileServing = await FirstOfAsync(() => !server.Tracker.Disposed.IsEmpty, () => proxy.Add(1, 1).AsTask());
        server.Tracker.Gate.SetResult();
        Assert.Equal(7, await call.WaitAsync(TestHost.Patience));
        await disposing.WaitAsync(TestHost.Patience);

        // The old code disposed the singleton first (DI disposes in the reverse order it made
        // things, and the hosted service was made before it), while its call still ran.
        Assert.False(disposedWhileServing, "The singleton was disposed while a call it served was in flight.");
        Assert.Single(server.Tracker.Disposed);
    }

    [Fact]
    public async Task StoppingTheClientHostFailsPendingAndLaterCalls()
    {
        await using TestHost server = await TestHost.StartServerAsync();
        TestHost client = await TestHost.StartClientAsync(server.ServerEndPoint);
        IHostingTestService proxy = client.Services.GetRequiredService<IHostingTestService>();
        MuxClient muxClient = client.Services.GetRequiredService<MuxClient>();
        Task<int> pending = proxy.WaitForGate(1);
        await TestHost.WaitUntilAsync(() => server.Tracker.Waiting == 1, "the call is in its handler");

        await client.DisposeAsync();

        await Assert.ThrowsAsync<MuxConnectionException>(() => pending.WaitAsync(TestHost.Patience));
        await Assert.ThrowsAsync<MuxConnectionException>(() => proxy.Add(1, 2).AsTask().WaitAsync(TestHost.Patience));
        Assert.DoesNotContain(client.Logs.Entries, e => e.Category == "Mux.Client" && e.Level >= LogLevel.Warning);
        Assert.Equal(MuxClientState.Closed, muxClient.State);
    }

    [Fact]
    public async Task TheClientReportsALostConnection()
    {
        TestHost server = await TestHost.StartServerAsync();
        await using TestHost client = await TestHost.StartClientAsync(server.ServerEndPoint, new() { ["Mux:Client:CallTimeout"] = "00:00:01" });

        await server.DisposeAsync();

        await TestHost.WaitUntilAsync(() => client.Logs.Entries.Any(e => e.Category == "Mux.Client" && e.EventId.Id == 21 && e.Level == LogLevel.Warning), "the client logs the lost connection");
        Assert.Single(client.Logs.Entries, e => e.Category == "Mux.Client" && e.EventId.Id == 21);

        // The server stays away: a new call waits for a connection within its timeout, then fails.
        var failed = await Assert.ThrowsAsync<MuxConnectionException>(() => client.Services.GetRequiredService<IHostingTestService>().Add(1, 2).AsTask().WaitAsync(TestHost.Patience));
        Assert.True(failed.IsSafeToRetry);
        Assert.Contains("MuxClientOptions.CallTimeout", failed.Message, StringComparison.Ordinal);
    }

    /// <summary>Calls until <paramref name="condition"/> holds or the call fails with
    /// <see cref="MuxConnectionException"/>; returns whether the condition holds then.</summary>
    private static async Task<bool> FirstOfAsync(Func<bool> condition, Func<Task> call)
    {
        DateTime deadline = DateTime.UtcNow + TestHost.Patience;
        while (!condition())
        {
            try
            {
                await call().WaitAsync(TestHost.Patience);
            }
            catch (MuxConnectionException)
            {
                // Looked at again: it may have come to hold before the call failed.
                return condition();
            }

            Assert.True(DateTime.UtcNow < deadline, "Neither happened in time.");
            await Task.Delay(5);
        }

        return true;
    }

    /// <summary>Calls until the call fails with <see cref="MuxConnectionException"/> (a call sent
    /// before the server's GoAway arrives still succeeds).</summary>
    private static async Task FailsSoonAsync(Func<Task> call)
    {
        DateTime deadline = DateTime.UtcNow + TestHost.Patience;
        while (true)
        {
            try
            {
                await call().WaitAsync(TestHost.Patience);
            }
            catch (MuxConnectionException)
            {
                return;
            }

            Assert.True(DateTime.UtcNow < deadline, "Calls kept succeeding after the server began to stop.");
            await Task.Delay(5);
        }
    }
}
