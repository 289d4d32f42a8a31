using System.Net;
using System.Net.Sockets;
using Microsoft.Extensions.Time.Testing;
using Mux.Protocol;
using Mux.Server;
using Mux.Tests.Protocol;
using Mux.Tests.Infrastructure;
using static Mux.Tests.Protocol.ProtocolTestHelpers;

namespace Mux.Tests.Connection;

/// <summary>Keepalive (KeepAliveInterval/KeepAliveTimeout): a peer that completes the handshake and
/// then goes silent is closed after interval + timeout, with a reason the caller can read; a peer
/// that answers Pings is never closed. Time is moved by hand with FakeTimeProvider: no sleeps.</summary>
public class KeepAliveTests
{
    private static readonly TimeSpan Interval = TimeSpan.FromSeconds(30);
    private static readonly TimeSpan PingTimeout = TimeSpan.FromSeconds(20);
    private static readonly uint WaitForCancellationId = MuxMethodId.Compute("Mux.Tests.Infrastructure.ITestService.WaitForCancellation");

    [Fact]
    public async Task AClientWhoseServerNeverAnswersAPing_ClosesAfterIntervalPlusTimeout_AndItsPendingCallFailsSayingWhy()
    {
        var time = new FakeTimeProvider();
        using var listener = new TcpListener(IPAddress.Loopback, 0);
        listener.Start();
        Task<MuxClient> connecting = MuxClient.ConnectAsync(listener.LocalEndpoint, new MuxClientOptions
        {
            AutoReconnect = false,
            CallTimeout = Timeout.InfiniteTimeSpan,
            TimeProvider = time,
            KeepAliveInterval = Interval,
            KeepAliveTimeout = PingTimeout,
        });
        await using RawMuxPeer server = await RawMuxPeer.AcceptAsync(listener);
        await server.AnswerHelloAsync();
        await using MuxClient client = await connecting.WaitAsync(TestHost.Patience);

        Task<int> pending = client.CreateProxy<ITestService>().Add(1, 2).AsTask();
        Assert.Equal(FrameType.Request, (await server.ExpectFrameAsync()).Type);

        time.Advance(Interval);
        ReceivedFrame ping = await server.ExpectFrameAsync(); // ...and the server never answers it.
        Assert.Equal(FrameType.Ping, ping.Type);
        Assert.Equal(ProtocolConstants.PingPayloadSize, ping.Payload.Length);

        time.Advance(PingTimeout - TimeSpan.FromSeconds(1));
        Assert.False(pending.IsCompleted);
        Assert.True(client.IsConnected);

        time.Advance(TimeSpan.FromSeconds(1));
        MuxConnectionException failure = await Assert.ThrowsAsync<MuxConnectionException>(() => pending.WaitAsync(TestHost.Patience));
        Assert.Equal(MuxCloseReason.KeepAliveTimeout, failure.Reason);
        Assert.Contains("no answer to a keepalive Ping within 20 s", failure.Message, StringComparison.Ordinal);
        Assert.False(failure.IsSafeToRetry); // The request was sent: the server may have run it.
        await server.AssertClosedByOtherSideAsync();
    }

    [Fact]
    public async Task AServerWhoseClientNeverAnswersAPing_ClosesTheConnectionAfterIntervalPlusTimeout_AndCancelsItsHandler()
    {
        var time = new FakeTimeProvider();
        var log = new CapturedLog();
        (MuxServer server, TestService service) = await StartServerAsync(new MuxServerOptions
        {
            TimeProvider = time,
            KeepAliveInterval = Interval,
            KeepAliveTimeout = PingTimeout,
            LoggerFactory = log,
        });
        await using MuxServer _ = server;
        await using RawMuxPeer client = await RawMuxPeer.ConnectAsync(server.LocalEndPoint!);
        await client.HandshakeAsync();
        ServerConnection connection = server.Connections.Single();
        await client.SendAsync(WriteFrame(FrameType.Request, 1, WaitForCancellationId, new RawBody([0x90])));
        await service.WaitStarted.Task.WaitAsync(TestHost.Patience);

        time.Advance(Interval);
        Assert.Equal(FrameType.Ping, (await client.ExpectFrameAsync()).Type); // Never answered.
        time.Advance(PingTimeout - TimeSpan.FromSeconds(1));
        Assert.False(connection.IsClosed);

        time.Advance(TimeSpan.FromSeconds(1));
        await connection.Completion.WaitAsync(TestHost.Patience);
        Assert.Equal(MuxCloseReason.KeepAliveTimeout, connection.CloseReason);
        await service.CancellationObserved.Task.WaitAsync(TestHost.Patience); // The running call's handler is cancelled.
        await client.AssertClosedByOtherSideAsync();
        Assert.Contains(log.Entries, e => e.Message.Contains("KeepAliveTimeout", StringComparison.Ordinal));
        await Hosts.WaitUntilAsync(() => server.ActiveConnections == 0, "the server to forget the closed connection"); // It does so in a continuation of the close.
    }

    [Fact]
    public async Task ALivePeer_IsNeverClosedByKeepalive_HoweverManyIntervalsPass()
    {
        var time = new FakeTimeProvider();
        (MuxServer server, TestService _) = await StartServerAsync(new MuxServerOptions
        {
            TimeProvider = time,
            KeepAliveInterval = Interval,
            KeepAliveTimeout = PingTimeout,
        });
        await using MuxServer __ = server;
        await using MuxClient client = await MuxClient.ConnectAsync(server.LocalEndPoint!, new MuxClientOptions
        {
            AutoReconnect = false,
            TimeProvider = time,
            KeepAliveInterval = Interval,
            KeepAliveTimeout = PingTimeout,
        }).WaitAsync(TestHost.Patience);
        ServerConnection serverSide = server.Connections.Single();
        ITestService proxy = client.CreateProxy<ITestService>();

        // Twenty silent intervals, in steps short enough that every Ping is answered (over real
        // loopback TCP) before its timeout can pass: both ends keep pinging, neither closes.
        long clientReceived = client.GetStatistics().FramesReceived;
        long serverReceived = serverSide.GetStatistics().FramesReceived;
        TimeSpan step = TimeSpan.FromSeconds(5);
        for (TimeSpan passed = TimeSpan.Zero; passed < 20 * Interval; passed += step)
        {
            time.Advance(step);
            await Hosts.WaitUntilAsync(
                () => !client.Connection.IsAwaitingPong && !serverSide.IsAwaitingPong,
                "both ends to hear from the other after their Pings");
            Assert.True(client.IsConnected, $"The client closed a live connection after {passed + step}.");
            Assert.False(serverSide.IsClosed, $"The server closed a live connection after {passed + step}.");
        }

        // At least one Ping or Pong arrived per interval (nothing else was sent).
        Assert.True(client.GetStatistics().FramesReceived - clientReceived >= 20, "The client heard nothing for whole intervals: no keepalive ran.");
        Assert.True(serverSide.GetStatistics().FramesReceived - serverReceived >= 20, "The server heard nothing for whole intervals: no keepalive ran.");
        Assert.Equal(3, await proxy.Add(1, 2).AsTask().WaitAsync(TestHost.Patience));
        Assert.Equal(1, server.ActiveConnections);
        Assert.Equal(1, server.ConnectionsAccepted);
    }

    [Fact]
    public async Task KeepaliveOptions_MustBePositiveOrInfinite_AndTheErrorSaysHowToFixThem()
    {
        var server = new MuxServer(new MuxServerOptions { EndPoint = new IPEndPoint(IPAddress.Loopback, 0), KeepAliveTimeout = TimeSpan.Zero });
        await using MuxServer _ = server;
        InvalidOperationException serverError = await Assert.ThrowsAsync<InvalidOperationException>(() => server.StartAsync());
        Assert.Contains("MuxServerOptions.KeepAliveTimeout", serverError.Message, StringComparison.Ordinal);
        Assert.Contains("must be positive", serverError.Message, StringComparison.Ordinal);
        Assert.Contains("Timeout.InfiniteTimeSpan", serverError.Message, StringComparison.Ordinal);

        InvalidOperationException clientError = await Assert.ThrowsAsync<InvalidOperationException>(() =>
            MuxClient.ConnectAsync(new IPEndPoint(IPAddress.Loopback, 1), new MuxClientOptions { KeepAliveInterval = TimeSpan.FromSeconds(-1) }));
        Assert.Contains("MuxClientOptions.KeepAliveInterval", clientError.Message, StringComparison.Ordinal);

        var idle = new MuxServer(new MuxServerOptions { EndPoint = new IPEndPoint(IPAddress.Loopback, 0), IdleTimeout = TimeSpan.Zero });
        await using MuxServer __ = idle;
        InvalidOperationException idleError = await Assert.ThrowsAsync<InvalidOperationException>(() => idle.StartAsync());
        Assert.Contains("MuxServerOptions.IdleTimeout", idleError.Message, StringComparison.Ordinal);
    }

    internal static async Task<(MuxServer Server, TestService Service)> StartServerAsync(MuxServerOptions options)
    {
        options.EndPoint ??= new IPEndPoint(IPAddress.Loopback, 0);
        var service = new TestService();
        var server = new MuxServer(options);
        server.AddService<ITestService>(service);
        await server.StartAsync().WaitAsync(TestHost.Patience);
        return (server, service);
    }
}
