using System.Net;
using Mux.Protocol;
using Mux.Tests.Infrastructure;
using Mux.Tests.Protocol;

namespace Mux.Tests.Deadlines;

/// <summary>A call's deadline reaches its handler (MuxCallContext, the handler's token) and is
/// passed on by a handler that calls another Mux service (docs/protocol.md, "Deadlines").</summary>
public class DeadlineTests
{
    private static readonly uint s_waitForDeadline = MuxMethodId.Compute("Mux.Tests.Deadlines.IDeadlineService.WaitForDeadline");

    [Fact]
    public async Task Handler_SeesTheCallersCallTimeoutAsItsRemainingTime()
    {
        var server = new MuxServer(new MuxServerOptions());
        server.AddService<IDeadlineService>(new DeadlineService());
        await using MuxClient client = await server.ConnectInMemoryAsync(new MuxClientOptions { CallTimeout = TimeSpan.FromSeconds(20) }).WaitAsync(TestHost.Patience);

        long remaining = await client.CreateProxy<IDeadlineService>().RemainingMilliseconds().WaitAsync(TestHost.Patience);

        Assert.InRange(remaining, 1, 20_000);
        await StopAsync(server);
    }

    [Fact]
    public async Task Handler_OfACallWithoutATimeout_HasNoCallContext()
    {
        var server = new MuxServer(new MuxServerOptions());
        server.AddService<IDeadlineService>(new DeadlineService());
        await using MuxClient client = await server.ConnectInMemoryAsync(new MuxClientOptions { CallTimeout = Timeout.InfiniteTimeSpan }).WaitAsync(TestHost.Patience);

        long remaining = await client.CreateProxy<IDeadlineService>().RemainingMilliseconds().WaitAsync(TestHost.Patience);

        Assert.Equal(-1, remaining);
        await StopAsync(server);
    }

    [Fact]
    public async Task HandlerToken_FiresAtTheDeadlineInTheRequest_WithoutAnyCancelFromTheCaller()
    {
        var service = new DeadlineService();
        var server = new MuxServer(new MuxServerOptions { EndPoint = new IPEndPoint(IPAddress.Loopback, 0) });
        server.AddService<IDeadlineService>(service);
        await server.StartAsync().WaitAsync(TestHost.Patience);
        await using RawMuxPeer raw = await RawMuxPeer.ConnectAsync(server.LocalEndPoint!);
        await raw.HandshakeAsync();

        // A caller that sends a 200 ms deadline and then only waits: no Cancel ever comes.
        await raw.SendAsync(WriteRequestWithDeadline(callId: 1, s_waitForDeadline, remainingMilliseconds: 200));

        TimeSpan? remainingWhenFired = await service.TokenFired.Task.WaitAsync(TestHost.Patience);
        Assert.Equal(TimeSpan.Zero, remainingWhenFired); // It fired at the deadline, not before.
        ReceivedFrame reply = await raw.ExpectFrameAsync();
        Assert.Equal(FrameType.Error, reply.Type);
        Assert.Equal(1u, reply.CallId);
        ErrorBody error = ErrorBody.Read(reply.Payload);
        Assert.Equal(MuxStatusCode.Canceled, error.Code);
        Assert.Equal("IDeadlineService.WaitForDeadline was canceled: the caller's deadline passed.", error.Message);
        await StopAsync(server);
    }

    [Fact]
    public async Task RequestWhoseDeadlineHasAlreadyPassed_RunsWithItsTokenAlreadyCancelled()
    {
        var service = new DeadlineService();
        var server = new MuxServer(new MuxServerOptions { EndPoint = new IPEndPoint(IPAddress.Loopback, 0) });
        server.AddService<IDeadlineService>(service);
        await server.StartAsync().WaitAsync(TestHost.Patience);
        await using RawMuxPeer raw = await RawMuxPeer.ConnectAsync(server.LocalEndPoint!);
        await raw.HandshakeAsync();

        await raw.SendAsync(WriteRequestWithDeadline(callId: 1, s_waitForDeadline, remainingMilliseconds: 0));

        Assert.Equal(TimeSpan.Zero, await service.TokenFired.Task.WaitAsync(TestHost.Patience));
        ReceivedFrame reply = await raw.ExpectFrameAsync();
        Assert.Equal(MuxStatusCode.Canceled, ErrorBody.Read(reply.Payload).Code);
        await StopAsync(server);
    }

    [Fact]
    public async Task Call_PastItsCallTimeout_CancelsTheHandlerAndFailsWithTimeoutException()
    {
        var service = new DeadlineService();
        var server = new MuxServer(new MuxServerOptions());
        server.AddService<IDeadlineService>(service);
        await using MuxClient client = await server.ConnectInMemoryAsync(new MuxClientOptions { CallTimeout = TimeSpan.FromMilliseconds(300) }).WaitAsync(TestHost.Patience);

        Task call = client.CreateProxy<IDeadlineService>().WaitForDeadline();

        await Assert.ThrowsAsync<TimeoutException>(() => call.WaitAsync(TestHost.Patience));
        Assert.NotNull(await service.TokenFired.Task.WaitAsync(TestHost.Patience));
        await StopAsync(server);
    }

    [Fact]
    public async Task TwoHops_TheSecondHandlerSeesTheFirstCallersDeadline_NotItsOwnClientsLongerTimeout()
    {
        await using Hops hops = await Hops.StartAsync(firstTimeout: TimeSpan.FromSeconds(20), nextHopTimeout: TimeSpan.FromHours(1));

        long remaining = await hops.Proxy.NextHopRemainingMilliseconds().WaitAsync(TestHost.Patience);

        Assert.InRange(remaining, 1, 20_000);
    }

    [Fact]
    public async Task TwoHops_WithoutATimeoutOnTheSecondClient_StillCarryTheFirstCallersDeadline()
    {
        await using Hops hops = await Hops.StartAsync(firstTimeout: TimeSpan.FromSeconds(20), nextHopTimeout: Timeout.InfiniteTimeSpan);

        long remaining = await hops.Proxy.NextHopRemainingMilliseconds().WaitAsync(TestHost.Patience);

        Assert.InRange(remaining, 1, 20_000);
    }

    [Fact]
    public async Task TwoHops_TheSecondHandlersTokenFiresAtTheInheritedDeadline_AndTheMiddleCallFails()
    {
        // The middle handler passes no token and its client has no timeout: only the inherited
        // deadline can end the second call.
        await using Hops hops = await Hops.StartAsync(firstTimeout: TimeSpan.FromMilliseconds(500), nextHopTimeout: Timeout.InfiniteTimeSpan);

        Task call = hops.Proxy.NextHopWaitForDeadline();

        await Assert.ThrowsAnyAsync<Exception>(() => call.WaitAsync(TestHost.Patience));
        Assert.NotNull(await hops.Last.TokenFired.Task.WaitAsync(TestHost.Patience));
        Exception middle = await hops.Middle.NextHopFailure.Task.WaitAsync(TestHost.Patience);
        switch (middle)
        {
            case TimeoutException timeout:
                Assert.Contains("deadline it inherited from the call this server handler serves (IDeadlineService.NextHopWaitForDeadline", timeout.Message, StringComparison.Ordinal);
                break;
            case MuxRemoteException remote:
                Assert.Equal(MuxStatusCode.Canceled, remote.StatusCode);
                break;
            default:
                Assert.Fail($"The middle call failed with {middle}");
                break;
        }
    }

    private static byte[] WriteRequestWithDeadline(uint callId, uint methodId, uint remainingMilliseconds)
    {
        using var output = new PooledBufferWriter();
        var body = new DeadlineBody<RawBody>(new RawBody([0x90]), remainingMilliseconds);
        FrameWriter.Write(output, FrameType.Request, callId, methodId, ref body, FrameFlags.Deadline);
        return output.WrittenSpan.ToArray();
    }

    private static async Task StopAsync(MuxServer server)
    {
        using var stop = new CancellationTokenSource(TestHost.Patience);
        await server.StopAsync(stop.Token).WaitAsync(TestHost.Patience + TestHost.Patience);
    }

    /// <summary>client → middle server (its handler calls on) → last server, in memory.</summary>
    private sealed class Hops : IAsyncDisposable
    {
        private readonly MuxServer _middleServer;
        private readonly MuxServer _lastServer;
        private readonly MuxClient _client;
        private readonly MuxClient _nextHopClient;

        private Hops(MuxServer middleServer, MuxServer lastServer, MuxClient client, MuxClient nextHopClient, DeadlineService middle, DeadlineService last)
        {
            _middleServer = middleServer;
            _lastServer = lastServer;
            _client = client;
            _nextHopClient = nextHopClient;
            Middle = middle;
            Last = last;
            Proxy = client.CreateProxy<IDeadlineService>();
        }

        public IDeadlineService Proxy { get; }

        public DeadlineService Middle { get; }

        public DeadlineService Last { get; }

        public static async Task<Hops> StartAsync(TimeSpan firstTimeout, TimeSpan nextHopTimeout)
        {
            var last = new DeadlineService();
            var lastServer = new MuxServer(new MuxServerOptions());
            lastServer.AddService<IDeadlineService>(last);
            MuxClient nextHopClient = await lastServer.ConnectInMemoryAsync(new MuxClientOptions { CallTimeout = nextHopTimeout }).WaitAsync(TestHost.Patience);

            var middle = new DeadlineService(nextHopClient.CreateProxy<IDeadlineService>());
            var middleServer = new MuxServer(new MuxServerOptions());
            middleServer.AddService<IDeadlineService>(middle);
            MuxClient client = await middleServer.ConnectInMemoryAsync(new MuxClientOptions { CallTimeout = firstTimeout }).WaitAsync(TestHost.Patience);
            return new Hops(middleServer, lastServer, client, nextHopClient, middle, last);
        }

        public async ValueTask DisposeAsync()
        {
            await _client.DisposeAsync().AsTask().WaitAsync(TestHost.Patience);
            await StopAsync(_middleServer);
            await _nextHopClient.DisposeAsync().AsTask().WaitAsync(TestHost.Patience);
            await StopAsync(_lastServer);
        }
    }
}
