using Microsoft.Extensions.Time.Testing;
using Mux.Server;
using Mux.Tests.Infrastructure;

namespace Mux.Tests.Connection;

/// <summary>Keepalive while the reader loop waits for outbound room (a peer that does not read what
/// this side sends): nothing can be read then, so the keepalive's "nothing arrived" would be wrong.
/// A peer that never reads is still closed (a dead peer looks the same), with a message that says
/// what happened; a peer that reads, however slowly, is alive.</summary>
public class KeepAliveBackpressureTests
{
    private static readonly TimeSpan Interval = TimeSpan.FromSeconds(30);
    private static readonly TimeSpan PingTimeout = TimeSpan.FromSeconds(20);

    [Fact]
    public async Task AClientThatNeverReads_IsClosedByKeepalive_WithAMessageSayingItReadNothing_NotThatNothingArrived()
    {
        var time = new FakeTimeProvider();
        (MuxServer server, TestService _) = await KeepAliveTests.StartServerAsync(new MuxServerOptions
        {
            TimeProvider = time,
            KeepAliveInterval = Interval,
            KeepAliveTimeout = PingTimeout,
            MaxOutboundBytesPerConnection = 64 * 1024,
        });
        await using MuxServer _ = server;
        await using RawMuxPeer raw = await RawMuxPeer.ConnectAsync(server.LocalEndPoint!, receiveBufferSize: 4096);
        await raw.HandshakeAsync();
        ServerConnection stuck = server.Connections.Single();

        // Requests for 1 KiB answers, sent until the server stops reading them (TCP then stops this sender).
        using var stop = new CancellationTokenSource();
        Task sending = Task.Run(async () =>
        {
            for (uint next = 1; !stop.IsCancellationRequested; next += 1000)
            {
                var frames = new List<byte>();
                for (uint id = next; id < next + 1000; id++)
                {
                    frames.AddRange(RawMuxPeer.Request(id, "Bytes", ValueTuple.Create(1024)));
                }

                await raw.SendWithoutDeadlineAsync([.. frames]);
            }
        });
        await Hosts.WaitUntilAsync(() => stuck.Inbound.IsWaitingForRoom, "the server to stop reading the client that does not read");

        // The reader may wait for room before the kernel's buffers are full: room the socket still
        // makes then counts as a read, and a busy machine can make it after the clock has moved. So
        // the clock moves on, an interval and a timeout at a time, until the keepalive has closed
        // the client (each close comes a whole interval and timeout after the last room).
        await Hosts.WaitUntilAsync(() =>
        {
            if (!stuck.IsClosed)
            {
                time.Advance(Interval);
                time.Advance(PingTimeout);
            }

            return stuck.IsClosed;
        }, "the keepalive to close the client that reads nothing");
        await stuck.Completion.WaitAsync(TestHost.Patience);
        Assert.Equal(MuxCloseReason.KeepAliveTimeout, stuck.CloseReason);
        string message = stuck.CloseError.Message;
        Assert.DoesNotContain("nothing arrived", message, StringComparison.Ordinal);
        Assert.Contains("the client read nothing this server sent for 50 s", message, StringComparison.Ordinal);
        Assert.Contains("MuxServerOptions.MaxOutboundBytesPerConnection", message, StringComparison.Ordinal);

        stop.Cancel();
        await sending.ContinueWith(static _ => { }, TaskScheduler.Default).WaitAsync(TestHost.Patience);
    }

    [Fact]
    public async Task AClientThatReadsSlowly_WhileTheServerWaitsForRoom_IsAlive_ThoughTheServerReadsNothingNewFromIt()
    {
        // The premise (the server takes its next request from bytes it had already read, so no
        // socket read proves the client alive) depends on how TCP split the requests: tried again
        // on a new connection when it did not hold.
        for (int attempt = 1; !await ReadSlowlyAsync(); attempt++)
        {
            Assert.True(attempt < 5, "The server read from its socket again in every attempt: the test proved nothing.");
        }
    }

    private static async Task<bool> ReadSlowlyAsync()
    {
        var time = new FakeTimeProvider();
        (MuxServer server, TestService _) = await KeepAliveTests.StartServerAsync(new MuxServerOptions
        {
            TimeProvider = time,
            KeepAliveInterval = Interval,
            KeepAliveTimeout = PingTimeout,
            MaxOutboundBytesPerConnection = 16 * 1024,
        });
        await using MuxServer _ = server;
        await using RawMuxPeer raw = await RawMuxPeer.ConnectAsync(server.LocalEndPoint!, receiveBufferSize: 4096, chunkSize: 4096);
        await raw.HandshakeAsync();
        ServerConnection stuck = server.Connections.Single();

        // Far more requests than the server answers before its queue is full, in one write: it
        // stops in the middle of the bytes of one read.
        var frames = new List<byte>();
        for (uint id = 1; id <= 20_000; id++)
        {
            frames.AddRange(RawMuxPeer.Request(id, "Bytes", ValueTuple.Create(1024)));
        }

        Task sending = raw.SendWithoutDeadlineAsync([.. frames]);
        await Hosts.WaitUntilAsync(() => stuck.Inbound.IsWaitingForRoom, "the server to stop reading the client that does not read");
        MuxConnectionStatistics before = stuck.GetStatistics();

        // Just before the server would ping, the client reads (4 KiB at a time, giving the server a
        // moment after each) until the server takes the next request, then stops reading again:
        // the server has room for a few answers, far fewer than the requests it holds.
        time.Advance(Interval - TimeSpan.FromSeconds(1));
        while (stuck.GetStatistics().FramesReceived == before.FramesReceived)
        {
            await raw.ExpectFrameAsync();
            for (int wait = 0; wait < 20 && stuck.GetStatistics().FramesReceived == before.FramesReceived; wait++)
            {
                await Task.Delay(1);
            }
        }

        await Hosts.WaitUntilAsync(() => stuck.Inbound.IsWaitingForRoom, "the server to stop reading the client again");
        if (stuck.GetStatistics().Reads != before.Reads)
        {
            stuck.Abort(MuxCloseReason.LocalShutdown, null); // A graceful stop would wait for a client that does not read.
            return false;
        }

        // A whole interval and timeout since the server last read from the socket: the room the
        // client made counts as a read.
        time.Advance(TimeSpan.FromSeconds(1));
        time.Advance(PingTimeout);
        Assert.False(stuck.IsClosed, $"The server closed a client that reads: {stuck.CloseError.Message}");

        // Once the client reads nothing for that long, it is closed.
        time.Advance(Interval);
        time.Advance(PingTimeout);
        await stuck.Completion.WaitAsync(TestHost.Patience);
        Assert.Contains("the client read nothing this server sent for", stuck.CloseError.Message, StringComparison.Ordinal);
        await sending.ContinueWith(static _ => { }, TaskScheduler.Default).WaitAsync(TestHost.Patience);
        return true;
    }
}
