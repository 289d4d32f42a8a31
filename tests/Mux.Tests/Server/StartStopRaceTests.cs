using System.Net;
using System.Net.Sockets;
using Microsoft.Extensions.Logging;
using Mux.Tests.Infrastructure;

namespace Mux.Tests.Server;

/// <summary>
/// A stop (or disposal) that comes while StartAsync is binding: once the stop has returned, nothing
/// may listen, and the server cannot be started again.
/// </summary>
public sealed class StartStopRaceTests
{
    /// <summary>
    /// The stop here runs inside StartAsync, after the bind and before the listener is published
    /// (on the warning StartAsync logs for an auth token without TLS), as a host's shutdown on
    /// another thread can. The stop used to find no listener to close and return; the start then
    /// published the socket and ran its accept loop, listening on a server that had stopped.
    /// </summary>
    [Fact]
    public async Task AStopDuringStart_LeavesNothingListening()
    {
        int port = FreePort();
        MuxServer? server = null;
        Task? stop = null;
        var log = new OnEvent("AuthTokenWithoutTls", () => stop = server!.StopAsync());
        server = new MuxServer(new MuxServerOptions { EndPoint = new IPEndPoint(IPAddress.Loopback, port), AuthToken = "secret", LoggerFactory = log });
        server.AddService<ITestService>(new TestService());

        Exception? startError = await Record.ExceptionAsync(() => server.StartAsync());
        Assert.NotNull(stop);
        await stop.WaitAsync(TestHost.Patience);

        await AssertRefusedAsync(port);
        Assert.False(server.IsListening);
        Assert.IsType<ObjectDisposedException>(startError);
        await server.DisposeAsync().AsTask().WaitAsync(TestHost.Patience);
    }

    /// <summary>A disposed server stays disposed: StartAsync says so with the exception .NET uses
    /// for it, where it used to say the server "has already been started".</summary>
    [Fact]
    public async Task StartAfterDispose_ThrowsObjectDisposedException()
    {
        var server = new MuxServer(new MuxServerOptions { EndPoint = new IPEndPoint(IPAddress.Loopback, 0) });
        await server.DisposeAsync();

        var error = await Assert.ThrowsAsync<ObjectDisposedException>(() => server.StartAsync());
        Assert.Contains("stopped", error.Message, StringComparison.Ordinal);
        Assert.Null(server.LocalEndPoint);
    }

    /// <summary>Started, then stopped: the same.</summary>
    [Fact]
    public async Task StartAfterStop_ThrowsObjectDisposedException()
    {
        var server = new MuxServer(new MuxServerOptions { EndPoint = new IPEndPoint(IPAddress.Loopback, 0) });
        await server.StartAsync();
        int port = ((IPEndPoint)server.LocalEndPoint!).Port;
        await server.StopAsync().WaitAsync(TestHost.Patience);

        await Assert.ThrowsAsync<ObjectDisposedException>(() => server.StartAsync());
        await AssertRefusedAsync(port);
    }

    /// <summary>Start and stop on two threads at once, many times: whichever wins, once both have
    /// returned nothing listens on the port.</summary>
    [Fact]
    public async Task StartAndStopAtOnce_LeaveNothingListening()
    {
        for (int round = 0; round < 50; round++)
        {
            int port = FreePort();
            var server = new MuxServer(new MuxServerOptions { EndPoint = new IPEndPoint(IPAddress.Loopback, port) });
            using var go = new ManualResetEventSlim();
            Task start = Task.Run(() =>
            {
                go.Wait();
                return server.StartAsync();
            });
            Task stop = Task.Run(() =>
            {
                go.Wait();
                return server.DisposeAsync().AsTask();
            });
            go.Set();
            await stop.WaitAsync(TestHost.Patience);
            try
            {
                await start.WaitAsync(TestHost.Patience);
            }
            catch (ObjectDisposedException)
            {
                // The stop came first.
            }

            Assert.False(server.IsListening);
            await AssertRefusedAsync(port);
        }
    }

    private static int FreePort()
    {
        using var probe = new Socket(AddressFamily.InterNetwork, SocketType.Stream, ProtocolType.Tcp);
        probe.Bind(new IPEndPoint(IPAddress.Loopback, 0));
        return ((IPEndPoint)probe.LocalEndPoint!).Port;
    }

    private static async Task AssertRefusedAsync(int port)
    {
        using var socket = new Socket(AddressFamily.InterNetwork, SocketType.Stream, ProtocolType.Tcp);
        var error = await Assert.ThrowsAsync<SocketException>(() => socket.ConnectAsync(IPAddress.Loopback, port).WaitAsync(TestHost.Patience));
        Assert.Equal(SocketError.ConnectionRefused, error.SocketErrorCode);
    }

    /// <summary>A logger factory that runs <c>action</c> (on the logging thread) when the event named
    /// <c>eventName</c> is logged.</summary>
    private sealed class OnEvent(string eventName, Action action) : LogHook
    {
        public override void Log<TState>(LogLevel logLevel, EventId eventId, TState state, Exception? exception, Func<TState, Exception?, string> formatter)
        {
            if (eventId.Name == eventName)
            {
                action();
            }
        }
    }
}
