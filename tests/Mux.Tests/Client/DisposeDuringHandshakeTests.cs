using System.Net;
using System.Net.Sockets;
using Microsoft.Extensions.Time.Testing;
using Mux.Protocol;
using Mux.Tests.Infrastructure;
using Mux.Tests.Protocol;
using static Mux.Tests.Infrastructure.RawServerFrames;

namespace Mux.Tests.Client;

/// <summary>
/// Disposing a client while one of its connections waits for the server's HelloAck ends at once:
/// a connection whose handshake never completed carries no call, so it is dropped, not drained.
/// The clock is fake and never moves, so a close that waited for the silent server (the graceful
/// drain, or the handshake's own timeout) would never end.
/// </summary>
public sealed class DisposeDuringHandshakeTests
{
    [Fact]
    public async Task AClientDisposedWhileItsFirstConnectionWaitsForHelloAck_EndsAtOnce_AndDropsTheConnection()
    {
        var clock = new FakeTimeProvider();
        using TcpListener listener = RawMuxPeer.Listen();
        MuxClient client = MuxClient.Create(Options(clock, listener.LocalEndpoint));
        await using RawMuxPeer server = await RawMuxPeer.AcceptAsync(listener);
        Assert.Equal(FrameType.Hello, (await server.ExpectFrameAsync()).Type);

        await client.DisposeAsync().AsTask().WaitAsync(TestHost.Patience);

        await server.AssertClosedByOtherSideAsync();
    }

    [Fact]
    public async Task AClientDisposedWhileItReconnects_AndTheNewConnectionWaitsForHelloAck_EndsAtOnce()
    {
        var clock = new FakeTimeProvider();
        using TcpListener listener = RawMuxPeer.Listen();
        MuxClient client = MuxClient.Create(Options(clock, listener.LocalEndpoint));
        RawMuxPeer first = await RawMuxPeer.AcceptAsync(listener);
        await first.AnswerHelloAsync();
        ITestService proxy = client.CreateProxy<ITestService>();
        Task<int> call = proxy.Add(1, 2).AsTask();
        ReceivedFrame request = await first.ExpectFrameAsync();
        await first.SendAsync(Response(request.CallId, 3));
        Assert.Equal(3, await call.WaitAsync(TestHost.Patience));

        // The server goes away; the client reconnects at once (only a failed attempt waits) and
        // sends Hello on the new connection, which the new server never answers.
        await first.DisposeAsync();
        await using RawMuxPeer second = await RawMuxPeer.AcceptAsync(listener);
        Assert.Equal(FrameType.Hello, (await second.ExpectFrameAsync()).Type);

        await client.DisposeAsync().AsTask().WaitAsync(TestHost.Patience);

        await second.AssertClosedByOtherSideAsync();
    }

    // Keepalive off, so that the hand-written servers see only the handshake and the calls.
    private static MuxClientOptions Options(TimeProvider clock, EndPoint endPoint) => new()
    {
        EndPoint = endPoint,
        TimeProvider = clock,
        KeepAliveInterval = Timeout.InfiniteTimeSpan,
    };
}
