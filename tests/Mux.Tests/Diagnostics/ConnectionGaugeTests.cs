using System.Collections.Concurrent;
using System.IO.Pipelines;
using System.Net;
using System.Net.Sockets;
using Microsoft.Extensions.Diagnostics.Metrics.Testing;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Time.Testing;
using Mux.Connection;
using Mux.Protocol;
using Mux.Tests.Infrastructure;
using Mux.Tests.Protocol;

namespace Mux.Tests.Diagnostics;

/// <summary>
/// The open-connections gauge counts a connection from its start to its close, also one whose close
/// comes as it starts. One at a time with the other telemetry tests: the gauge is process-wide.
/// </summary>
[Collection(nameof(TelemetryCollection))]
public sealed class ConnectionGaugeTests
{
    private static readonly TimeSpan HandshakeTimeout = TimeSpan.FromSeconds(10);

    /// <summary>
    /// The clock passes the handshake timeout between the accept (which the timeout counts from) and
    /// the connection's start, as a slow TLS handshake would: the start counts the connection open,
    /// then its timer's first look closes it at once and the loops never start. The close uncounts
    /// it: the gauge must not keep it open for ever, and no timer may keep the closed connection.
    /// </summary>
    [Fact]
    public async Task AConnectionClosedByItsHandshakeDeadlineAsItStarts_IsNotLeftCountedOpen_NorHeldByItsTimer()
    {
        var clock = new TimerWatchingClock();
        var log = new DeadlinePassesOnAccept(clock);
        var server = new MuxServer(new MuxServerOptions
        {
            EndPoint = new IPEndPoint(IPAddress.Loopback, 0),
            TimeProvider = clock,
            HandshakeTimeout = HandshakeTimeout,
            KeepAliveInterval = TimeSpan.FromSeconds(30),
            LoggerFactory = log,
        });
        await using (server)
        {
            await server.StartAsync().WaitAsync(TestHost.Patience);
            using var gauge = new MetricCollector<int>(null, "Mux", "mux.server.active_connections");
            int before = Read(gauge);

            var toServer = new Pipe();
            var toClient = new Pipe();
            server.Accept(new Duplex(toServer.Reader, toClient.Writer));

            // The close came inside the start, on this thread.
            Assert.Equal(MuxCloseReason.HandshakeTimeout, Assert.Single(log.Closes));
            Assert.Equal(before, Read(gauge));

            // Nor does its keepalive timer outlive it: armed after that close (which found none to
            // dispose), it held the closed connection until it fired, an interval later.
            Assert.All(clock.ConnectionTimers, timer => Assert.True(timer.IsDisposed));
        }
    }

    /// <summary>
    /// A client's connection is counted under its server's address and port from its start: while
    /// its handshake was under way (Hello sent, no answer yet: up to ConnectTimeout for a server that
    /// never answers, and on every reconnect) it was counted without them, as if it had no server.
    /// </summary>
    [Fact]
    public async Task AClientConnectionInItsHandshake_IsCountedUnderItsServersAddressAndPort()
    {
        using TcpListener listener = RawMuxPeer.Listen();
        int port = ((IPEndPoint)listener.LocalEndpoint).Port;
        using var gauge = new MetricCollector<int>(null, "Mux", "mux.client.active_connections");
        Task<MuxClient> connecting = MuxClient.ConnectAsync(listener.LocalEndpoint, new MuxClientOptions { KeepAliveInterval = Timeout.InfiniteTimeSpan });
        using RawMuxPeer server = await RawMuxPeer.AcceptAsync(listener).WaitAsync(TestHost.Patience);
        Assert.Equal(FrameType.Hello, (await server.ExpectFrameAsync()).Type);

        gauge.RecordObservableInstruments();
        CollectedMeasurement<int> ours = Assert.Single(gauge.GetMeasurementSnapshot(), m => Equals(m.Tags.GetValueOrDefault("server.port"), port));
        Assert.Equal(1, ours.Value);
        Assert.Equal("127.0.0.1", ours.Tags["server.address"]);

        await server.SendAsync(ProtocolTestHelpers.WriteHelloFrame(FrameType.HelloAck, new HandshakeSettings(ProtocolConstants.Version, 4 * 1024 * 1024, int.MaxValue, null)));
        MuxClient client = await connecting.WaitAsync(TestHost.Patience);
        server.Dispose(); // The client's close then need not wait out its drain.
        await client.DisposeAsync().AsTask().WaitAsync(TestHost.Patience);
    }

    private static int Read(MetricCollector<int> gauge)
    {
        gauge.RecordObservableInstruments();
        return gauge.LastMeasurement?.Value ?? 0;
    }

    /// <summary>Moves the clock past the handshake timeout when the server logs the accept (event 3,
    /// ConnectionAccepted, logged between the accept's timestamp and the start), and keeps the
    /// reason of each close it logs (event 1, ConnectionClosed).</summary>
    private sealed class DeadlinePassesOnAccept(FakeTimeProvider clock) : LogHook
    {
        public List<MuxCloseReason> Closes { get; } = [];

        public override void Log<TState>(LogLevel logLevel, EventId eventId, TState state, Exception? exception, Func<TState, Exception?, string> formatter)
        {
            if (eventId.Name == "ConnectionAccepted")
            {
                clock.Advance(HandshakeTimeout);
            }
            else if (eventId.Name == "ConnectionClosed" && state is IReadOnlyList<KeyValuePair<string, object?>> values)
            {
                lock (Closes)
                {
                    Closes.Add((MuxCloseReason)values.First(value => value.Key == "Reason").Value!);
                }
            }
        }
    }

    /// <summary>A fake clock that keeps the timers connections create, to see whether they were disposed.</summary>
    private sealed class TimerWatchingClock : FakeTimeProvider
    {
        private readonly ConcurrentQueue<WatchedTimer> _timers = new();

        public IEnumerable<WatchedTimer> ConnectionTimers => _timers;

        public override ITimer CreateTimer(TimerCallback callback, object? state, TimeSpan dueTime, TimeSpan period)
        {
            ITimer timer = base.CreateTimer(callback, state, dueTime, period);
            if (state is not MuxConnection)
            {
                return timer;
            }

            var watched = new WatchedTimer(timer);
            _timers.Enqueue(watched);
            return watched;
        }
    }

    private sealed class WatchedTimer(ITimer timer) : ITimer
    {
        public bool IsDisposed { get; private set; }

        public bool Change(TimeSpan dueTime, TimeSpan period) => timer.Change(dueTime, period);

        public void Dispose()
        {
            IsDisposed = true;
            timer.Dispose();
        }

        public ValueTask DisposeAsync()
        {
            IsDisposed = true;
            return timer.DisposeAsync();
        }
    }

    /// <summary>A pipe pair seen from one end.</summary>
    private sealed record Duplex(PipeReader Input, PipeWriter Output) : IDuplexPipe;
}
