using System.Net;
using System.Net.Sockets;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Time.Testing;
using Mux.Tests.Infrastructure;

namespace Mux.Tests.Server;

/// <summary>
/// What the accept loop does when taking a connection off the listener fails. The failures come
/// from a replaced accept (MuxServer.AcceptSocket), as the operating system raises them.
/// </summary>
public sealed class AcceptErrorTests
{
    /// <summary>
    /// An accept can fail for a while and then work again: the process ran out of file descriptors
    /// (EMFILE, a burst of connections under a low ulimit) or socket buffers, or a connection was
    /// aborted while it waited in the backlog. That must not stop the server for good: it retries,
    /// and the connection waiting in the backlog is served once accepting works again.
    /// </summary>
    [Theory]
    [InlineData(SocketError.TooManyOpenSockets)]
    [InlineData(SocketError.NoBufferSpaceAvailable)]
    [InlineData(SocketError.ConnectionAborted)]
    public async Task AnAcceptThatFailsForAWhile_DoesNotStopTheServer(SocketError error)
    {
        var log = new CapturedLog();
        await using var server = new MuxServer(new MuxServerOptions { EndPoint = new IPEndPoint(IPAddress.Loopback, 0), LoggerFactory = log });
        server.AddService<ITestService>(new TestService());
        int accepts = 0;
        server.AcceptSocket = listener => Interlocked.Increment(ref accepts) <= 3
            ? ValueTask.FromException<Socket>(new SocketException((int)error))
            : listener.AcceptAsync(CancellationToken.None);
        await server.StartAsync();

        await using MuxClient client = await MuxClient.ConnectAsync(server.LocalEndPoint!).WaitAsync(TestHost.Patience);
        Assert.Equal(5, await client.CreateProxy<ITestService>().Add(2, 3).AsTask().WaitAsync(TestHost.Patience));
        Assert.True(server.IsListening);
        Assert.Equal(3, log.Entries.Count(entry => entry.EventId.Name == "AcceptRetrying" && entry.Level == LogLevel.Warning));
    }

    /// <summary>A server that stops while its accept loop waits to retry stops at once, not when
    /// the wait is over (the server's clock here never moves by itself).</summary>
    [Fact]
    public async Task AServerWaitingToRetryAnAccept_StopsAtOnce()
    {
        var log = new CapturedLog();
        var server = new MuxServer(new MuxServerOptions { EndPoint = new IPEndPoint(IPAddress.Loopback, 0), LoggerFactory = log, TimeProvider = new FakeTimeProvider() });
        server.AcceptSocket = _ => ValueTask.FromException<Socket>(new SocketException((int)SocketError.TooManyOpenSockets));
        await server.StartAsync();
        await Hosts.WaitUntilAsync(() => log.Entries.Any(entry => entry.EventId.Name == "AcceptRetrying"), "the accept loop waits to retry");
        Assert.True(server.IsListening);

        await server.DisposeAsync().AsTask().WaitAsync(TestHost.Patience);
        Assert.False(server.IsListening);
    }

    /// <summary>An error that does not pass (the listening socket itself is broken) still ends the
    /// accept loop, logged as an error; IsListening says so.</summary>
    [Fact]
    public async Task AnAcceptErrorThatDoesNotPass_EndsAcceptingAndIsLogged()
    {
        var log = new CapturedLog();
        await using var server = new MuxServer(new MuxServerOptions { EndPoint = new IPEndPoint(IPAddress.Loopback, 0), LoggerFactory = log });
        server.AcceptSocket = _ => ValueTask.FromException<Socket>(new SocketException((int)SocketError.InvalidArgument));
        await server.StartAsync();

        await Hosts.WaitUntilAsync(() => !server.IsListening, "the accept loop ends");
        Assert.Contains(log.Entries, entry => entry.EventId.Name == "AcceptFailed" && entry.Level == LogLevel.Error);
        Assert.DoesNotContain(log.Entries, entry => entry.EventId.Name == "AcceptRetrying");
    }

    /// <summary>A server that no longer accepts closes its listener: a client's connect is refused
    /// at once, rather than taken into the backlog to wait for a HelloAck until its ConnectTimeout.</summary>
    [Fact]
    public async Task AnAcceptErrorThatDoesNotPass_ClosesTheListener_SoThatConnectsAreRefused()
    {
        await using var server = new MuxServer(new MuxServerOptions { EndPoint = new IPEndPoint(IPAddress.Loopback, 0) });
        server.AcceptSocket = _ => ValueTask.FromException<Socket>(new SocketException((int)SocketError.InvalidArgument));
        await server.StartAsync();
        await Hosts.WaitUntilAsync(() => !server.IsListening, "the accept loop ends");

        using var socket = new Socket(AddressFamily.InterNetwork, SocketType.Stream, ProtocolType.Tcp);
        SocketException refused = await Assert.ThrowsAsync<SocketException>(() => socket.ConnectAsync(server.LocalEndPoint!).WaitAsync(TestHost.Patience));
        Assert.Equal(SocketError.ConnectionRefused, refused.SocketErrorCode);
    }
}
