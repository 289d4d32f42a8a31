using System.Net;
using Mux.Samples.Contracts;
using Mux.Samples.Load;
using Mux.Tests.Infrastructure;

namespace Mux.Tests.Samples;

/// <summary>
/// The load sample's loop (samples/Mux.Samples.Load) against a real server on loopback that is
/// killed and restarted on the same port, as a user does with the hosted server sample.
/// </summary>
public sealed class LoadSampleTests
{
    private const int Callers = 20;

    // Short backoff so the restarted server is found promptly; the defaults have their own tests.
    private static MuxClientOptions FastReconnect() => new()
    {
        ReconnectInitialDelay = TimeSpan.FromMilliseconds(20),
        ReconnectMaxDelay = TimeSpan.FromMilliseconds(200),
        CallTimeout = TestHost.Patience,
    };

    [Fact]
    public async Task TheLoad_SurvivesAServerRestart_CountsOnlyTheLostCallsAsConnectionErrors_AndResumes()
    {
        MuxServer first = await StartServerAsync(new IPEndPoint(IPAddress.Loopback, 0));
        var endPoint = (IPEndPoint)first.LocalEndPoint!;
        await using MuxClient client = await MuxClient.ConnectAsync(endPoint, FastReconnect());
        LoadLoop loop = await LoadLoop.StartAsync(client, client.CreateProxy<IUserService>(), "add", Callers, CancellationToken.None);
        await Hosts.WaitUntilAsync(() => loop.Calls >= 1_000, "the load has made 1,000 calls");

        // Kill: the server drops its connection without draining; calls in flight on it fail.
        await first.StopAsync(new CancellationToken(canceled: true)).WaitAsync(TestHost.Patience);
        await Hosts.WaitUntilAsync(() => client.State == MuxClientState.Reconnecting, "the client is reconnecting");
        long callsBeforeRestart = loop.Calls;

        MuxServer second = await StartServerAsync(endPoint);
        await using (second)
        {
            await Hosts.WaitUntilAsync(() => loop.Calls >= callsBeforeRestart + 1_000, "the load has made 1,000 calls on the restarted server");
            LoadResult result = await loop.StopAsync().WaitAsync(TestHost.Patience);

            // Not spun on: each caller lost at most the one call it had in flight; the next one
            // waited in the client for the new connection instead of failing.
            Assert.InRange(result.Errors.Connection, 0, Callers);
            Assert.Equal(0, result.Errors.Timeout);
            Assert.Equal(0, result.Errors.Other);
            Assert.Equal(result.Errors.Connection, result.Errors.Total);
            Assert.True(result.Calls >= callsBeforeRestart + 1_000, $"{result.Calls} calls in the result, {callsBeforeRestart} before the restart");
            Assert.Equal(1, result.Reconnects);
            Assert.Equal(1, second.ConnectionsAccepted);
            Assert.Equal(MuxClientState.Connected, client.State);
        }
    }

    [Fact]
    public async Task StoppingTheLoadWhileEveryCallerWaits_ClosesTheClient_AndDoesNotCountTheAbandonedCallsAsErrors()
    {
        var users = new StallingUserService();
        var server = new MuxServer(new MuxServerOptions { EndPoint = new IPEndPoint(IPAddress.Loopback, 0) });
        server.AddService<IUserService>(users);
        await server.StartAsync().WaitAsync(TestHost.Patience);
        await using (server)
        {
            await using MuxClient client = await MuxClient.ConnectAsync(server.LocalEndPoint!, FastReconnect());
            LoadLoop loop = await LoadLoop.StartAsync(client, client.CreateProxy<IUserService>(), "add", Callers, CancellationToken.None);
            await Hosts.WaitUntilAsync(() => loop.Calls >= 1_000, "the load has made 1,000 calls");

            // From now on no call returns, as when the server is down and every caller waits in
            // the client for it, each up to its CallTimeout (15 s here): stopping must not wait
            // that out, and the calls it abandons are not failures of the server.
            users.Stall();
            await Hosts.WaitUntilAsync(() => users.Stalled == Callers, "every caller waits for its call");
            long calls = loop.Calls;
            try
            {
                LoadResult result = await loop.StopAsync().WaitAsync(TestHost.Patience);

                Assert.Equal(0, result.Errors.Total);
                Assert.Equal(calls, result.Calls);
                Assert.Equal(MuxClientState.Closed, client.State);
            }
            finally
            {
                users.Release(); // so that the server's shutdown does not wait for the held calls
            }
        }
    }

    [Fact]
    public async Task ARunWithoutATimeLimit_StopsWhenInterrupted_AndReportsItsCalls()
    {
        MuxServer server = await StartServerAsync(new IPEndPoint(IPAddress.Loopback, 0));
        await using (server)
        {
            await using MuxClient client = await MuxClient.ConnectAsync(server.LocalEndPoint!, FastReconnect());
            LoadOptions options = LoadOptions.Parse(["--seconds", "0", "--callers", "5", "--method", "list100"]);
            using var interrupt = new CancellationTokenSource();
            var progress = new StringWriter();

            Task<LoadResult?> run = LoadRunner.RunAsync(client, client.CreateProxy<IUserService>(), options, TextWriter.Synchronized(progress), interrupt.Token);
            await Hosts.WaitUntilAsync(() => progress.ToString().Contains("[  1s]", StringComparison.Ordinal), "the run has printed its first second");
            interrupt.Cancel();
            LoadResult? result = await run.WaitAsync(TestHost.Patience);

            Assert.NotNull(result);
            Assert.True(result.Calls > 0, "no calls in the result");
            Assert.Equal(0, result.Errors.Total);
            Assert.InRange(result.Seconds, 1, TestHost.Patience.TotalSeconds);
            Assert.Equal(1, server.ConnectionsAccepted);
        }
    }

    private static async Task<MuxServer> StartServerAsync(IPEndPoint endPoint)
    {
        var server = new MuxServer(new MuxServerOptions { EndPoint = endPoint });
        server.AddService<IUserService>(new UserService());
        await server.StartAsync().WaitAsync(TestHost.Patience);
        return server;
    }

    /// <summary>Answers Add until <see cref="Stall"/>; after that, holds every Add until
    /// <see cref="Release"/> (closing the client does not end a handler that takes no token).</summary>
    private sealed class StallingUserService : IUserService
    {
        private readonly TaskCompletionSource<int> _released = new(TaskCreationOptions.RunContinuationsAsynchronously);

        // Set by the test; read by the handlers.
        private volatile bool _stalling;

        // Calls held since Stall; incremented by the handlers.
        private int _stalled;

        public int Stalled => Volatile.Read(ref _stalled);

        public void Stall() => _stalling = true;

        public void Release() => _released.TrySetResult(0);

        public ValueTask<int> Add(int a, int b)
        {
            if (!_stalling)
            {
                return new(a + b);
            }

            Interlocked.Increment(ref _stalled);
            return new(_released.Task);
        }

        public Task<List<User>> List(int count, CancellationToken cancellationToken = default) => Task.FromResult(SampleUsers.Create(count));

        public Task Touch(string id) => Task.CompletedTask;
    }
}
