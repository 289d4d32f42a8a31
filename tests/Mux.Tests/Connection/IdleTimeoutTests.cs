using System.Buffers.Binary;
using Microsoft.Extensions.Time.Testing;
using Mux.Protocol;
using Mux.Server;
using Mux.Tests.Infrastructure;
using Mux.Tests.Protocol;

namespace Mux.Tests.Connection;

/// <summary>MuxServerOptions.IdleTimeout: a connection that holds no calls for that long is told
/// GoAway and closed gracefully; one that holds a call is never idle. Time moves by hand
/// (FakeTimeProvider); keepalive is off so that only the idle close is at work.</summary>
public class IdleTimeoutTests
{
    private static readonly TimeSpan Idle = TimeSpan.FromMinutes(2);

    private static MuxServerOptions IdleOptions(FakeTimeProvider time) => new()
    {
        TimeProvider = time,
        IdleTimeout = Idle,
        KeepAliveInterval = Timeout.InfiniteTimeSpan,
    };

    [Fact]
    public async Task AConnectionWithoutCallsForIdleTimeout_GetsGoAway_AndClosesOnceTheClientFinishes()
    {
        var time = new FakeTimeProvider();
        (MuxServer server, TestService _) = await KeepAliveTests.StartServerAsync(IdleOptions(time));
        await using MuxServer __ = server;
        await using RawMuxPeer client = await RawMuxPeer.ConnectAsync(server.LocalEndPoint!);
        await client.HandshakeAsync();
        await client.SendAsync(RawMuxPeer.AddRequest(1, 2, 3));
        Assert.Equal(FrameType.Response, (await client.ExpectFrameAsync()).Type);
        ServerConnection connection = server.Connections.Single();
        // The answer arrives a moment before the server counts the call out and stamps the start of
        // the idle period: fake time must not move before that.
        await Hosts.WaitUntilAsync(() => connection.Incoming.Count == 0, "the server to count the call out");

        time.Advance(Idle - TimeSpan.FromSeconds(1));
        Assert.False(connection.Incoming.IsGoingAway);

        time.Advance(TimeSpan.FromSeconds(1));
        ReceivedFrame goAway = await client.ExpectFrameAsync();
        Assert.Equal(FrameType.GoAway, goAway.Type);
        Assert.Equal(1u, BinaryPrimitives.ReadUInt32LittleEndian(goAway.Payload)); // Every call it received was served.

        client.ShutdownSend(); // What a Mux client does on GoAway with nothing pending.
        await client.AssertClosedByOtherSideAsync();
        await connection.Completion.WaitAsync(TestHost.Patience);
        Assert.Equal(MuxCloseReason.IdleTimeout, connection.CloseReason);
    }

    [Fact]
    public async Task AnIdleTimeoutShorterThanTheHandshakeTimeout_StillClosesAtTheIdleTimeout()
    {
        // Both deadlines share the connection's one timer: the handshake's, pending when the timer
        // is first armed and later than the idle close, must not hold that close back.
        var time = new FakeTimeProvider();
        MuxServerOptions options = IdleOptions(time);
        options.HandshakeTimeout = Idle * 10;
        (MuxServer server, TestService _) = await KeepAliveTests.StartServerAsync(options);
        await using MuxServer __ = server;
        await using RawMuxPeer client = await RawMuxPeer.ConnectAsync(server.LocalEndPoint!);
        await client.HandshakeAsync();
        ServerConnection connection = server.Connections.Single();

        time.Advance(Idle - TimeSpan.FromSeconds(1));
        Assert.False(connection.Incoming.IsGoingAway);
        time.Advance(TimeSpan.FromSeconds(1));
        Assert.Equal(FrameType.GoAway, (await client.ExpectFrameAsync()).Type);
        client.ShutdownSend();
        await connection.Completion.WaitAsync(TestHost.Patience);
        Assert.Equal(MuxCloseReason.IdleTimeout, connection.CloseReason);
    }

    [Fact]
    public async Task AConnectionHoldingACall_IsNotIdle_AndBecomesIdleWhenTheCallEnds()
    {
        var time = new FakeTimeProvider();
        (MuxServer server, TestService service) = await KeepAliveTests.StartServerAsync(IdleOptions(time));
        await using MuxServer _ = server;
        await using RawMuxPeer client = await RawMuxPeer.ConnectAsync(server.LocalEndPoint!);
        await client.HandshakeAsync();
        ServerConnection connection = server.Connections.Single();
        await client.SendAsync(RawMuxPeer.Request(5, "Hang", ValueTuple.Create(5)));
        await Hosts.WaitUntilAsync(() => service.HangingCalls == 1, "the call to run");

        for (int i = 0; i < 10; i++)
        {
            time.Advance(Idle);
            Assert.False(connection.Incoming.IsGoingAway, $"A connection holding a call was closed as idle after {(i + 1) * Idle}.");
        }

        service.ReleaseHangingCalls();
        ReceivedFrame response = await client.ExpectFrameAsync();
        Assert.Equal((FrameType.Response, 5u), (response.Type, response.CallId));
        await Hosts.WaitUntilAsync(() => connection.Incoming.Count == 0, "the call to be retired");

        time.Advance(Idle - TimeSpan.FromSeconds(1));
        Assert.False(connection.Incoming.IsGoingAway);
        time.Advance(TimeSpan.FromSeconds(1));
        Assert.Equal(FrameType.GoAway, (await client.ExpectFrameAsync()).Type);
        client.ShutdownSend();
        await client.AssertClosedByOtherSideAsync();
    }

    [Fact]
    public async Task AMuxClientTakesTheIdleGoAway_AndItsNextCallSucceedsOnANewConnection()
    {
        var time = new FakeTimeProvider();
        (MuxServer server, TestService _) = await KeepAliveTests.StartServerAsync(IdleOptions(time));
        await using MuxServer __ = server;
        await using MuxClient client = await MuxClient.ConnectAsync(server.LocalEndPoint!).WaitAsync(TestHost.Patience);
        ITestService proxy = client.CreateProxy<ITestService>();
        Assert.Equal(3, await proxy.Add(1, 2).AsTask().WaitAsync(TestHost.Patience));
        ServerConnection first = server.Connections.Single();
        // The client has its answer a moment before the server counts the call out; until then the
        // connection is busy and a timer tick would only re-arm for another IdleTimeout of fake time.
        await Hosts.WaitUntilAsync(() => first.Incoming.Count == 0, "the server to count the call out");

        time.Advance(Idle);
        await first.Completion.WaitAsync(TestHost.Patience);
        Assert.Equal(MuxCloseReason.IdleTimeout, first.CloseReason);

        Assert.Equal(5, await proxy.Add(2, 3).AsTask().WaitAsync(TestHost.Patience));
        Assert.Equal(2, server.ConnectionsAccepted);
    }
}
