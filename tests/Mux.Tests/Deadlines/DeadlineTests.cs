using System.Net;
using System.Net.Sockets;
using MessagePack;
using Microsoft.Extensions.Time.Testing;
using Mux.Protocol;
using Mux.Tests.Infrastructure;
using Mux.Tests.Protocol;

namespace Mux.Tests.Deadlines;

/// <summary>A call's deadline travels in its Request and reaches the handler: its context reports
/// it, its token fires at it, and a request that arrives after it is not run (docs/protocol.md,
/// "Deadlines").</summary>
public class DeadlineTests
{
    private static readonly uint s_remainingMilliseconds = MuxMethodId.Compute("Mux.Tests.Deadlines.IDeadlineService.RemainingMilliseconds");

    [Fact]
    public async Task Handler_SeesTheCallersCallTimeoutAsItsDeadline()
    {
        await using Served served = await Served.StartAsync(new MuxClientOptions { CallTimeout = TimeSpan.FromSeconds(20) });

        long remaining = await served.Proxy.RemainingMilliseconds().WaitAsync(TestHost.Patience);

        Assert.InRange(remaining, 1, 20_000);
    }

    [Fact]
    public async Task Handler_OfACallerWithoutACallTimeout_SeesNoDeadline()
    {
        await using Served served = await Served.StartAsync(new MuxClientOptions { CallTimeout = Timeout.InfiniteTimeSpan });

        Assert.Equal(-1, await served.Proxy.RemainingMilliseconds().WaitAsync(TestHost.Patience));
    }

    [Fact]
    public async Task HandlerToken_FiresAtTheDeadlineTheCallerSent_NotBefore_AndTheCallerGetsItsOwnTimeout()
    {
        // The server's clock is moved by hand; the caller's 30 s never pass in real time, so only the
        // deadline the Request carried can stop the handler.
        var clock = new FakeTimeProvider();
        await using Served served = await Served.StartAsync(
            new MuxClientOptions { CallTimeout = TimeSpan.FromSeconds(30) },
            new MuxServerOptions { TimeProvider = clock, KeepAliveInterval = Timeout.InfiniteTimeSpan });

        Task call = served.Proxy.WaitForDeadline();
        MuxCallContext context = await served.Service.Waiting.Task.WaitAsync(TestHost.Patience);
        Assert.InRange(context.RemainingTime!.Value, TimeSpan.FromSeconds(29), TimeSpan.FromSeconds(30));
        Assert.Equal(clock.GetUtcNow() + context.RemainingTime.Value, context.Deadline);

        clock.Advance(TimeSpan.FromSeconds(29));
        Assert.False(context.CancellationToken.IsCancellationRequested);
        Assert.False(served.Service.TokenFired.Task.IsCompleted);

        clock.Advance(TimeSpan.FromSeconds(1));
        Assert.Same(context, await served.Service.TokenFired.Task.WaitAsync(TestHost.Patience));
        Assert.Equal(TimeSpan.Zero, context.RemainingTime);

        // The server answers DeadlineExceeded; the client reports it as its own timeout.
        TimeoutException timeout = await Assert.ThrowsAsync<TimeoutException>(() => call.WaitAsync(TestHost.Patience));
        Assert.Equal("The Mux call to IDeadlineService.WaitForDeadline did not complete within 30 s (MuxClientOptions.CallTimeout).", timeout.Message);
    }

    [Fact]
    public async Task HandlerStoppedByTheDeadline_IsAnsweredWithDeadlineExceeded()
    {
        var clock = new FakeTimeProvider();
        var service = new DeadlineService();
        await using MuxServer server = await StartTcpServerAsync(service, clock);
        await using RawMuxPeer raw = await RawMuxPeer.ConnectAsync(server.LocalEndPoint!);
        await raw.HandshakeAsync();

        await raw.SendAsync(WriteRequest(callId: 1, MuxMethodId.Compute("Mux.Tests.Deadlines.IDeadlineService.WaitForDeadline"), remainingMilliseconds: 1500));
        await service.Waiting.Task.WaitAsync(TestHost.Patience);
        clock.Advance(TimeSpan.FromMilliseconds(1500));

        ReceivedFrame reply = await raw.ExpectFrameAsync();
        Assert.Equal((FrameType.Error, 1u), (reply.Type, reply.CallId));
        ErrorBody error = ErrorBody.Read(reply.Payload);
        Assert.Equal(MuxStatusCode.DeadlineExceeded, error.Code);
        Assert.Equal(14, (int)error.Code);
        Assert.Equal("IDeadlineService.WaitForDeadline stopped at the caller's deadline.", error.Message);
    }

    [Fact]
    public async Task Request_WithTheLongestDeadlineTheHeaderCarries_RunsAndIsStillCancelledByItsCaller()
    {
        var service = new DeadlineService();
        await using MuxServer server = await StartTcpServerAsync(service, TimeProvider.System);
        await using RawMuxPeer raw = await RawMuxPeer.ConnectAsync(server.LocalEndPoint!);
        await raw.HandshakeAsync();

        // uint.MaxValue ms is one more than a timer accepts: the handler must still get its token.
        await raw.SendAsync(WriteRequest(callId: 1, MuxMethodId.Compute("Mux.Tests.Deadlines.IDeadlineService.WaitForDeadline"), remainingMilliseconds: uint.MaxValue));
        MuxCallContext context = await service.Waiting.Task.WaitAsync(TestHost.Patience);
        Assert.InRange(context.RemainingTime!.Value, TimeSpan.FromDays(49), TimeSpan.FromDays(50));
        await raw.SendAsync(ProtocolTestHelpers.WriteRawFrame(FrameType.Cancel, 1, []));

        ReceivedFrame reply = await raw.ExpectFrameAsync();
        Assert.Equal((FrameType.Error, 1u), (reply.Type, reply.CallId));
        Assert.Equal(MuxStatusCode.Canceled, ErrorBody.Read(reply.Payload).Code);
    }

    [Fact]
    public async Task Request_ArrivingPastItsDeadline_IsNotRun_FailsWithDeadlineExceeded_AndTheConnectionGoesOn()
    {
        var service = new DeadlineService();
        await using MuxServer server = await StartTcpServerAsync(service, TimeProvider.System);
        await using RawMuxPeer raw = await RawMuxPeer.ConnectAsync(server.LocalEndPoint!);
        await raw.HandshakeAsync();

        await raw.SendAsync(WriteRequest(callId: 1, s_remainingMilliseconds, remainingMilliseconds: 0));

        ReceivedFrame refused = await raw.ExpectFrameAsync();
        Assert.Equal((FrameType.Error, 1u), (refused.Type, refused.CallId));
        ErrorBody error = ErrorBody.Read(refused.Payload);
        Assert.Equal(MuxStatusCode.DeadlineExceeded, error.Code);
        Assert.Equal("The server did not run IDeadlineService.RemainingMilliseconds: the caller's deadline had passed when the request arrived.", error.Message);

        // The next request, with time left, runs on the same connection and sees what it sent.
        await raw.SendAsync(WriteRequest(callId: 2, s_remainingMilliseconds, remainingMilliseconds: 5000));
        ReceivedFrame answered = await raw.ExpectFrameAsync();
        Assert.Equal((FrameType.Response, 2u), (answered.Type, answered.CallId));
        Assert.InRange(MessagePackSerializer.Deserialize<long>(answered.Payload), 1, 5000);
        Assert.Equal(1, service.Started);
    }

    [Fact]
    public async Task Client_SendsItsRemainingTimeInEveryRequest_AndNoneWithoutACallTimeout()
    {
        foreach ((TimeSpan timeout, bool expected) in new[] { (TimeSpan.FromSeconds(20), true), (Timeout.InfiniteTimeSpan, false) })
        {
            using var listener = new TcpListener(IPAddress.Loopback, 0);
            listener.Start();
            Task<MuxClient> connecting = MuxClient.ConnectAsync(listener.LocalEndpoint, new MuxClientOptions { CallTimeout = timeout, AutoReconnect = false });
            await using RawMuxPeer peer = await RawMuxPeer.AcceptAsync(listener);
            await peer.AnswerHelloAsync();
            await using MuxClient client = await connecting.WaitAsync(TestHost.Patience);

            Task<long> call = client.CreateProxy<IDeadlineService>().RemainingMilliseconds();
            ReceivedFrame request = await peer.ExpectFrameAsync();

            Assert.Equal(FrameType.Request, request.Type);
            Assert.Equal(expected, (request.Flags & FrameFlags.Deadline) != 0);
            Assert.InRange(request.RemainingMilliseconds, expected ? 19_000u : 0u, expected ? 20_000u : 0u);
            Assert.Equal([0x90], request.Payload); // The arguments: an empty MessagePack array.

            await peer.SendAsync(ProtocolTestHelpers.WriteFrame(FrameType.Response, request.CallId, 0, new RawBody([0x07])));
            Assert.Equal(7, await call.WaitAsync(TestHost.Patience));
        }
    }

    private static async Task<MuxServer> StartTcpServerAsync(DeadlineService service, TimeProvider clock)
    {
        var server = new MuxServer(new MuxServerOptions { EndPoint = new IPEndPoint(IPAddress.Loopback, 0), TimeProvider = clock, KeepAliveInterval = Timeout.InfiniteTimeSpan });
        server.AddService<IDeadlineService>(service);
        await server.StartAsync().WaitAsync(TestHost.Patience);
        return server;
    }

    /// <summary>A Request with no arguments and the given deadline header.</summary>
    internal static byte[] WriteRequest(uint callId, uint methodId, uint remainingMilliseconds)
    {
        using var output = new PooledBufferWriter();
        var body = new RequestBody<RawBody>(new RawBody([0x90]), remainingMilliseconds, null, null);
        FrameWriter.Write(output, FrameType.Request, callId, methodId, ref body, FrameFlags.Deadline);
        return output.WrittenSpan.ToArray();
    }
}
