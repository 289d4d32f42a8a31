using System.Net;
using System.Security.Claims;
using Microsoft.Extensions.Time.Testing;
using Mux.Protocol;
using Mux.Tests.Infrastructure;

namespace Mux.Tests.Protocol;

/// <summary>
/// Ping is allowed only after the handshake (docs/protocol.md, Keepalive): before it, each end
/// accepts nothing but the handshake's frames, and the handshake has its own timeouts (the client's
/// ConnectTimeout, the server's HandshakeTimeout). The keepalive timer runs from the connection's
/// start, so a handshake that took longer than KeepAliveInterval (a slow
/// MuxServerOptions.Authenticate: a token service, a database) had that end send a Ping before it,
/// which the other end refuses as a broken protocol.
/// </summary>
public sealed class KeepAliveBeforeHandshakeTests
{
    private static readonly TimeSpan Interval = TimeSpan.FromSeconds(1);

    /// <summary>The client's keepalive comes due while the server's Authenticate still runs: the
    /// server took the client's Ping for a frame before its HelloAck and refused the connection.</summary>
    [Fact]
    public async Task AClientWaitingForASlowAuthenticate_SendsNoPing_AndConnects()
    {
        var clock = new FakeTimeProvider();
        var authenticating = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        var accept = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        var server = new MuxServer(new MuxServerOptions
        {
            TimeProvider = clock,
            HandshakeTimeout = TimeSpan.FromMinutes(5),
            KeepAliveInterval = Timeout.InfiniteTimeSpan,
            Authenticate = async (info, cancellationToken) =>
            {
                authenticating.TrySetResult();
                await accept.Task.WaitAsync(cancellationToken);
                return new ClaimsPrincipal(new ClaimsIdentity("test"));
            },
        });
        server.AddService<ITestService>(new TestService());
        await using (server)
        {
            Task<MuxClient> connecting = server.ConnectInMemoryAsync(new MuxClientOptions
            {
                TimeProvider = clock,
                ConnectTimeout = TimeSpan.FromMinutes(5),
                KeepAliveInterval = Interval,
            });

            // The client's Hello has arrived, so its keepalive timer runs: it comes due now.
            await authenticating.Task.WaitAsync(TestHost.Patience);
            clock.Advance(Interval);
            accept.TrySetResult();

            await using MuxClient client = await connecting.WaitAsync(TestHost.Patience);
            Assert.Equal(3, await client.CreateProxy<ITestService>().Add(1, 2).AsTask().WaitAsync(TestHost.Patience));
        }
    }

    /// <summary>The server's keepalive comes due while its own Authenticate runs: the client got a
    /// Ping where only HelloAck (or a refusal) may come.</summary>
    [Fact]
    public async Task AServerWhoseAuthenticateIsSlow_SendsNoPingBeforeItsHelloAck()
    {
        var clock = new FakeTimeProvider();
        var authenticating = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        var accept = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        var server = new MuxServer(new MuxServerOptions
        {
            EndPoint = new IPEndPoint(IPAddress.Loopback, 0),
            TimeProvider = clock,
            HandshakeTimeout = TimeSpan.FromMinutes(5),
            KeepAliveInterval = Interval,
            Authenticate = async (info, cancellationToken) =>
            {
                authenticating.TrySetResult();
                await accept.Task.WaitAsync(cancellationToken);
                return new ClaimsPrincipal(new ClaimsIdentity("test"));
            },
        });
        await using (server)
        {
            await server.StartAsync().WaitAsync(TestHost.Patience);
            using RawMuxPeer client = await RawMuxPeer.ConnectAsync(server.LocalEndPoint!);

            // The server has read the Hello, so its keepalive timer runs: it comes due now.
            Task<HandshakeSettings> handshake = client.HandshakeAsync();
            await authenticating.Task.WaitAsync(TestHost.Patience);
            clock.Advance(Interval);
            accept.TrySetResult();

            // HandshakeAsync fails unless the server's first frame is its HelloAck.
            await handshake.WaitAsync(TestHost.Patience);
        }
    }

    /// <summary>The server's keepalive comes due as it accepts the Hello: the handshake was marked done before HelloAck was
    /// queued, so a Ping the timer sent in between reached the client first. The window is a few instructions wide and the
    /// old code has no seam inside it, so this is a stress test: one thread advances the clock past the interval over and
    /// over while clients connect one after another, and each client's first frame must be the HelloAck.</summary>
    [Fact]
    public async Task AServerWhoseKeepAliveComesDueAsItAcceptsTheHello_SendsItsHelloAckFirst()
    {
        var clock = new FakeTimeProvider();
        TimeSpan interval = TimeSpan.FromMilliseconds(1);
        var server = new MuxServer(new MuxServerOptions
        {
            EndPoint = new IPEndPoint(IPAddress.Loopback, 0),
            TimeProvider = clock,
            HandshakeTimeout = Timeout.InfiniteTimeSpan,
            KeepAliveInterval = interval,

            // Nothing closes a connection while the clock runs: a fake timer disposed as it fires is the fake's own race.
            KeepAliveTimeout = Timeout.InfiniteTimeSpan,
        });
        server.AddService<ITestService>(new TestService());
        var clients = new List<RawMuxPeer>();
        await using (server)
        {
            await server.StartAsync().WaitAsync(TestHost.Patience);
            using var stop = new CancellationTokenSource();
            Task ticking = Task.Factory.StartNew(
                () =>
                {
                    // Each step is past the interval, so every connection whose handshake is done is due a Ping.
                    while (!stop.IsCancellationRequested)
                    {
                        clock.Advance(2 * interval);
                    }
                },
                CancellationToken.None,
                TaskCreationOptions.LongRunning,
                TaskScheduler.Default);
            try
            {
                for (int i = 0; i < 1_000; i++)
                {
                    RawMuxPeer client = await RawMuxPeer.ConnectAsync(server.LocalEndPoint!);
                    clients.Add(client);

                    // HandshakeAsync fails unless the server's first frame is its HelloAck.
                    await client.HandshakeAsync().WaitAsync(TestHost.Patience);
                }
            }
            finally
            {
                stop.Cancel();
                await ticking.WaitAsync(TestHost.Patience);
                clients.ForEach(client => client.Dispose());
            }
        }
    }
}
