using System.Net;
using System.Net.Sockets;
using MessagePack;
using Microsoft.Extensions.Time.Testing;
using Mux.Client;
using Mux.Protocol;
using Mux.Tests.Infrastructure;
using Mux.Tests.Protocol;
using Mux.Tests.Server;

namespace Mux.Tests.Client;

/// <summary>MuxClientOptions.RetryBudget: calls a server reports as never run are sent again within the budget, on another
/// instance when there is one, within their own deadline; past the budget they fail at once as Overloaded; a call that may have
/// run is never sent again.</summary>
public class RetryBudgetCallTests
{
    [Fact]
    public async Task ARefusedCall_IsRetriedOnAnotherInstance()
    {
        await using Instance full = await Instance.StartFullAsync();
        await using Instance free = await Instance.StartAsync(cap: null);
        await using MuxClient client = await MuxClient.ConnectAsync(
            new MuxClientOptions { EndPoints = { full.EndPoint, free.EndPoint } }).WaitAsync(TestHost.Patience);
        IAdmissionService proxy = client.CreateProxy<IAdmissionService>();

        // The first pick is random between the two: call until one was refused by the full instance.
        int id = 0;
        while (full.Server.CallsRefusedOverloaded == 0)
        {
            Assert.True(++id <= 200, "No call went to the full instance.");
            Assert.Equal(id, await proxy.Echo(id).WaitAsync(TestHost.Patience));
        }

        Assert.Equal(1, full.Server.CallsRefusedOverloaded);
        Assert.Equal(1, client.RetriesMade);
        Assert.Equal(1, full.Service.TotalRuns); // Only the call that fills it ran there...
        for (int i = 1; i <= id; i++)
        {
            Assert.Equal(1, free.Service.RunsOf(i)); // ...and exactly once here.
        }
    }

    [Fact]
    public async Task WithEveryServerRefusing_RetriesStayWithinTheRatioOfCallsPlusTheMinimum()
    {
        await using Instance first = await Instance.StartFullAsync();
        await using Instance second = await Instance.StartFullAsync();
        var clock = new FakeTimeProvider(DateTimeOffset.UtcNow);
        await using MuxClient client = await MuxClient.ConnectAsync(new MuxClientOptions
        {
            EndPoints = { first.EndPoint, second.EndPoint },
            TimeProvider = clock,
            KeepAliveInterval = Timeout.InfiniteTimeSpan,
            RetryBudget = new MuxRetryBudget { Ratio = 0.2, MinRetriesPerSecond = 10 },
        }).WaitAsync(TestHost.Patience);
        IAdmissionService proxy = client.CreateProxy<IAdmissionService>();

        const int Calls = 500;
        int spent = 0;
        for (int id = 1; id <= Calls; id++)
        {
            MuxRemoteException refused = await Assert.ThrowsAsync<MuxRemoteException>(() => proxy.Echo(id)).WaitAsync(TestHost.Patience);
            Assert.Equal(MuxStatusCode.Overloaded, refused.StatusCode);
            if (refused.Message.Contains("retry budget (MuxClientOptions.RetryBudget) is spent", StringComparison.Ordinal))
            {
                spent++;
            }
        }

        // 0.2 of each call plus 10 a second over the ten-second window: 100 + 100 retries, and not one more.
        const int Allowed = (int)(0.2 * Calls) + (10 * 10);
        Assert.Equal(Allowed, client.RetriesMade);
        Assert.Equal(Calls + Allowed, first.Server.CallsRefusedOverloaded + second.Server.CallsRefusedOverloaded);
        Assert.True(spent > Calls / 2, $"Only {spent} of {Calls} calls failed for the spent budget.");
        Assert.Equal(2, first.Service.TotalRuns + second.Service.TotalRuns); // The two calls that fill them, no other.

        // Ten seconds on, the window holds neither those calls nor those retries: only the minimum again.
        clock.Advance(TimeSpan.FromSeconds(RetryBudget.WindowSeconds));
        await Assert.ThrowsAsync<MuxRemoteException>(() => proxy.Echo(Calls + 1)).WaitAsync(TestHost.Patience);
        Assert.Equal(Allowed + (10 * 10), client.RetriesMade);
    }

    [Fact]
    public async Task ARetriedCall_KeepsTheDeadlineFixedWhenItWasMade()
    {
        var clock = new FakeTimeProvider(DateTimeOffset.UtcNow);
        using TcpListener listener = RawMuxPeer.Listen();
        var options = new MuxClientOptions
        {
            TimeProvider = clock, CallTimeout = TimeSpan.FromSeconds(30), KeepAliveInterval = Timeout.InfiniteTimeSpan, AutoReconnect = false,
        };
        Task<MuxClient> connecting = MuxClient.ConnectAsync(listener.LocalEndpoint, options);
        RawMuxPeer server = await RawMuxPeer.AcceptAsync(listener);
        await server.AnswerHelloAsync();
        MuxClient client = await connecting.WaitAsync(TestHost.Patience);
        try
        {
            await RefuseOnceAndAnswerAsync(client, server, clock);
        }
        finally
        {
            // The peer goes first: a client on a fake clock waits for nothing once its connection is gone.
            server.Close();
            await client.DisposeAsync().AsTask().WaitAsync(TestHost.Patience);
            await server.DisposeAsync();
        }
    }

    private static async Task RefuseOnceAndAnswerAsync(MuxClient client, RawMuxPeer server, FakeTimeProvider clock)
    {
        Task<int> call = client.InvokeAsync<(int, int), int>(1, (2, 3)).AsTask();
        ReceivedFrame first = await server.ExpectFrameAsync();
        Assert.Equal(FrameType.Request, first.Type);
        Assert.Equal(30_000u, first.RemainingMilliseconds); // Made now, on a clock that does not move by itself.

        // Five seconds pass on the client's clock before the server refuses: the retry has 25 s left, not a fresh 30.
        clock.Advance(TimeSpan.FromSeconds(5));
        await server.SendAsync(ProtocolTestHelpers.WriteFrame(
            FrameType.Error, first.CallId, 0, new ErrorBody(MuxStatusCode.Overloaded, "busy", null)));
        ReceivedFrame retry = await server.ExpectFrameAsync();
        Assert.Equal(FrameType.Request, retry.Type);
        Assert.NotEqual(first.CallId, retry.CallId);
        Assert.Equal(25_000u, retry.RemainingMilliseconds);

        await server.SendAsync(ProtocolTestHelpers.WriteRawFrame(FrameType.Response, retry.CallId, MessagePackSerializer.Serialize(5)));
        Assert.Equal(5, await call.WaitAsync(TestHost.Patience));
        Assert.Equal(1, client.RetriesMade);
    }

    [Fact]
    public async Task ACallThatMayHaveRun_IsNeverRetried()
    {
        using TcpListener listener = RawMuxPeer.Listen();
        var options = new MuxClientOptions { KeepAliveInterval = Timeout.InfiniteTimeSpan, AutoReconnect = false };
        Task<MuxClient> connecting = MuxClient.ConnectAsync(listener.LocalEndpoint, options);
        RawMuxPeer server = await RawMuxPeer.AcceptAsync(listener);
        await server.AnswerHelloAsync();
        await using MuxClient client = await connecting.WaitAsync(TestHost.Patience);

        // The Request reached the server, then the connection was lost: it may have run.
        Task<int> call = client.InvokeAsync<(int, int), int>(1, (2, 3)).AsTask();
        Assert.Equal(FrameType.Request, (await server.ExpectFrameAsync()).Type);
        server.Close();
        MuxConnectionException lost = await Assert.ThrowsAsync<MuxConnectionException>(() => call).WaitAsync(TestHost.Patience);
        Assert.False(lost.IsSafeToRetry, lost.Message);
        Assert.Equal(0, client.RetriesMade);
        await server.DisposeAsync();
    }

    [Fact]
    public async Task ACallThatFailedInItsHandler_IsNeverRetried()
    {
        await using TestHost host = await TestHost.StartTcpAsync();
        MuxRemoteException failed = await Assert.ThrowsAsync<MuxRemoteException>(() => host.Proxy.Throw("ran")).WaitAsync(TestHost.Patience);
        Assert.Equal(MuxStatusCode.HandlerFailed, failed.StatusCode);
        Assert.Equal(0, host.Client.RetriesMade);
    }

    [Fact]
    public async Task WithoutABudget_ARefusedCallFailsAtOnceAsOverloaded()
    {
        await using Instance full = await Instance.StartFullAsync();
        await using MuxClient client = await MuxClient.ConnectAsync(full.EndPoint, new MuxClientOptions { RetryBudget = null }).WaitAsync(TestHost.Patience);
        MuxRemoteException refused = await Assert.ThrowsAsync<MuxRemoteException>(() => client.CreateProxy<IAdmissionService>().Echo(1))
            .WaitAsync(TestHost.Patience);
        Assert.Equal(MuxStatusCode.Overloaded, refused.StatusCode);
        Assert.Equal(1, full.Server.CallsRefusedOverloaded);
        Assert.Equal(0, client.RetriesMade);
    }

    /// <summary>A server, perhaps with a cap of one that another client's held call fills.</summary>
    private sealed class Instance : IAsyncDisposable
    {
        private MuxClient? _holder;
        private Task? _held;

        private Instance(MuxServer server, AdmissionService service)
        {
            Server = server;
            Service = service;
        }

        public MuxServer Server { get; }

        public AdmissionService Service { get; }

        public EndPoint EndPoint => Server.LocalEndPoint!;

        public static async Task<Instance> StartAsync(int? cap)
        {
            var service = new AdmissionService();
            var server = new MuxServer(new MuxServerOptions { EndPoint = new IPEndPoint(IPAddress.Loopback, 0), MaxConcurrentCalls = cap });
            server.AddService<IAdmissionService>(service);
            await server.StartAsync().WaitAsync(TestHost.Patience);
            return new Instance(server, service);
        }

        /// <summary>A server that runs one call at once, and runs one (held) already: it refuses every other.</summary>
        public static async Task<Instance> StartFullAsync()
        {
            Instance instance = await StartAsync(cap: 1);
            instance._holder = await MuxClient.ConnectAsync(instance.EndPoint, new MuxClientOptions { RetryBudget = null }).WaitAsync(TestHost.Patience);
            instance._held = instance._holder.CreateProxy<IAdmissionService>().Hold(-1);
            await Hosts.WaitUntilAsync(() => instance.Service.Held == 1, "the holding call to run");
            return instance;
        }

        public async ValueTask DisposeAsync()
        {
            Service.ReleaseHeld();
            if (_holder is not null)
            {
                await _held!.WaitAsync(TestHost.Patience);
                await _holder.DisposeAsync().AsTask().WaitAsync(TestHost.Patience);
            }

            using var deadline = new CancellationTokenSource(TestHost.Patience);
            await Server.StopAsync(deadline.Token).WaitAsync(TestHost.Patience + TestHost.Patience);
        }
    }
}
