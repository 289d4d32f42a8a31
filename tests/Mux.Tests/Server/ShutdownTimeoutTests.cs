using System.Net;
using Microsoft.Extensions.Time.Testing;
using Mux.Server;
using Mux.Tests.Infrastructure;

namespace Mux.Tests.Server;

/// <summary>
/// A stop is bounded by its ShutdownTimeout even when a client does not read: once that time has
/// run out, its connections are dropped at once, however much they still have to send. The server
/// runs on a fake clock that moves only by the ShutdownTimeout, so a stop that waits for anything
/// else on that clock (the transport's grace period for a send stuck on a full socket) never ends.
/// </summary>
public sealed class ShutdownTimeoutTests
{
    private static readonly TimeSpan ShutdownTimeout = TimeSpan.FromMilliseconds(500);

    private const int Answers = 40;
    private const int AnswerSize = 1024 * 1024;

    /// <summary>A server on <paramref name="clock"/> whose DisposeAsync waits <see cref="ShutdownTimeout"/>.</summary>
    private static async Task<MuxServer> StartServerAsync(FakeTimeProvider clock, int maxOutboundBytes)
    {
        var server = new MuxServer(new MuxServerOptions
        {
            EndPoint = new IPEndPoint(IPAddress.Loopback, 0),
            TimeProvider = clock,
            ShutdownTimeout = ShutdownTimeout,
            KeepAliveInterval = Timeout.InfiniteTimeSpan,
            MaxOutboundBytesPerConnection = maxOutboundBytes,
        });
        server.AddService<ITestService>(new TestService());
        await server.StartAsync().WaitAsync(TestHost.Patience);
        return server;
    }

    /// <summary>A client that reads through a 4 KiB buffer, and reads nothing: it asks for
    /// <see cref="Answers"/> answers of 1 MiB each, far more than the sockets' buffers hold.</summary>
    private static async Task<RawMuxPeer> AskWithoutReadingAsync(MuxServer server)
    {
        RawMuxPeer raw = await RawMuxPeer.ConnectAsync(server.LocalEndPoint!, receiveBufferSize: 4096);
        await raw.HandshakeAsync();
        for (uint id = 1; id <= Answers; id++)
        {
            await raw.SendAsync(RawMuxPeer.Request(id, "Bytes", ValueTuple.Create(AnswerSize)));
        }

        return raw;
    }

    /// <summary>Moves the clock past the ShutdownTimeout and expects the stop to end, in real time,
    /// without the clock moving again; then lets a stop that did not end go on.</summary>
    private static async Task AssertTheStopEndsAtItsShutdownTimeoutAsync(MuxServer server, FakeTimeProvider clock, Task stopping, string when)
    {
        clock.Advance(ShutdownTimeout);
        try
        {
            Task first = await Task.WhenAny(stopping, Task.Delay(TestHost.Patience));
            Assert.True(first == stopping, $"The stop did not end when its ShutdownTimeout ran out {when}: it still waited for something on a clock that had not moved since.");
            await stopping;
            Assert.Equal(0, server.ActiveConnections);
        }
        finally
        {
            clock.Advance(TimeSpan.FromMinutes(1)); // Whatever it waits for on the clock, it has it now.
            await stopping.WaitAsync(TestHost.Patience);
        }
    }

    [Fact]
    public async Task AStopOutOfTime_WhileAClientThatDoesNotReadHoldsUpItsAnswers_DropsTheConnectionAtOnce()
    {
        var clock = new FakeTimeProvider();
        MuxServer server = await StartServerAsync(clock, maxOutboundBytes: 1024 * 1024);
        await using RawMuxPeer raw = await AskWithoutReadingAsync(server);
        ServerConnection stuck = server.Connections.Single();

        // The answers fill the sockets' buffers, then the queue: the handlers wait for room, so the
        // drain can only end by the ShutdownTimeout.
        await Hosts.WaitUntilAsync(() => stuck.Outbound.IsFull, "the answers to back up behind the client that does not read");
        Task stopping = server.DisposeAsync().AsTask();

        await AssertTheStopEndsAtItsShutdownTimeoutAsync(server, clock, stopping, "while it waited for the calls");
    }

    [Fact]
    public async Task AStopOutOfTime_WhileItsGracefulCloseStillSendsToAClientThatDoesNotRead_DropsTheConnectionAtOnce()
    {
        // Room for every answer: the handlers finish, and once the client has ended its stream
        // after GoAway the drain is done and the graceful close begins, with 40 MiB still to send.
        var clock = new FakeTimeProvider();
        MuxServer server = await StartServerAsync(clock, maxOutboundBytes: 64 * 1024 * 1024);
        await using RawMuxPeer raw = await AskWithoutReadingAsync(server);
        ServerConnection stuck = server.Connections.Single();
        await Hosts.WaitUntilAsync(() => stuck.Incoming.HighestReceivedCallId == Answers && stuck.Incoming.Count == 0, "every handler to finish");

        Task stopping = server.DisposeAsync().AsTask();
        await Hosts.WaitUntilAsync(() => stuck.Incoming.IsGoingAway, "the server to send GoAway");
        raw.ShutdownSend();
        await Hosts.WaitUntilAsync(() => stuck.IsClosed, "the drain to end and the graceful close to begin");
        Assert.False(stopping.IsCompleted, "The graceful close ended although the client had read none of its answers.");

        await AssertTheStopEndsAtItsShutdownTimeoutAsync(server, clock, stopping, "while its graceful close still sent");
    }
}
