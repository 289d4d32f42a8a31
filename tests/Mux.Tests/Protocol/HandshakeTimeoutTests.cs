using System.Net;
using System.Net.Sockets;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Logging.Testing;
using Microsoft.Extensions.Time.Testing;
using Mux.Protocol;
using Mux.Server;
using Mux.Tests.Connection;
using Mux.Tests.Infrastructure;
using Mux.Tests.Security;
using static Mux.Tests.Protocol.ProtocolTestHelpers;

namespace Mux.Tests.Protocol;

/// <summary>
/// MuxServerOptions.HandshakeTimeout: a connection that has not completed its handshake (Mux's, and
/// TLS's first when the server has TLS) is closed at the timeout, counted from the accept on the
/// server's clock, not before, with the reason logged; the server's other connections go on. Time
/// moves by hand (FakeTimeProvider). The timeout is long (5 min) so that the real clock never
/// reaches it while a test runs: only the fake clock can.
/// </summary>
public sealed class HandshakeTimeoutTests
{
    private static readonly TimeSpan HandshakeTimeout = TimeSpan.FromMinutes(5);
    private static readonly TimeSpan JustUnder = HandshakeTimeout - TimeSpan.FromMilliseconds(1);

    [Fact]
    public async Task APeerThatSendsNothing_IsClosedAtTheTimeout_NotBefore_TheReasonIsLogged_AndAnotherClientsCallsGoOn()
    {
        var clock = new FakeTimeProvider();
        using var logs = new FakeLoggerProvider();
        using ILoggerFactory loggerFactory = LoggerFactory.Create(builder => builder.AddProvider(logs));
        (MuxServer server, TestService _) = await KeepAliveTests.StartServerAsync(Options(clock, loggerFactory));
        await using MuxServer __ = server;
        await using MuxClient client = await MuxClient.ConnectAsync(server.LocalEndPoint!).WaitAsync(TestHost.Patience);
        ITestService proxy = client.CreateProxy<ITestService>();
        Assert.Equal(3, await proxy.Add(1, 2).AsTask().WaitAsync(TestHost.Patience));
        ServerConnection served = server.Connections.Single();

        using Socket silent = await ConnectAsync(server);
        ServerConnection waiting = await NextConnectionAsync(server, served);

        clock.Advance(JustUnder);
        Assert.Equal(5, await proxy.Add(2, 3).AsTask().WaitAsync(TestHost.Patience)); // Real time passes meanwhile.
        Assert.False(waiting.IsClosed, $"The connection was closed ({waiting.CloseReason}) before its handshake timeout.");
        Assert.False(silent.Poll(0, SelectMode.SelectRead), "The peer saw the connection end before the handshake timeout.");
        Assert.Equal(2, server.ActiveConnections);

        clock.Advance(TimeSpan.FromMilliseconds(1));
        await AssertClosedByServerAsync(silent);
        await waiting.Completion.WaitAsync(TestHost.Patience);
        Assert.Equal(MuxCloseReason.HandshakeTimeout, waiting.CloseReason);
        AssertClosedForTheTimeoutWasLogged(logs, waiting);

        // The client whose handshake was done long ago is not affected by the same clock.
        await Hosts.WaitUntilAsync(() => server.ActiveConnections == 1, "the server to forget the closed connection");
        Assert.False(served.IsClosed, $"The connection whose handshake was done was closed too ({served.CloseReason}).");
        Assert.Equal(7, await proxy.Add(3, 4).AsTask().WaitAsync(TestHost.Patience));
    }

    [Fact]
    public async Task APeerThatSendsHalfAHello_IsClosedAtTheTimeout_NotBefore_AndTheReasonIsLogged()
    {
        var clock = new FakeTimeProvider();
        using var logs = new FakeLoggerProvider();
        using ILoggerFactory loggerFactory = LoggerFactory.Create(builder => builder.AddProvider(logs));
        (MuxServer server, TestService _) = await KeepAliveTests.StartServerAsync(Options(clock, loggerFactory));
        await using MuxServer __ = server;

        using Socket peer = await ConnectAsync(server);
        ServerConnection waiting = await NextConnectionAsync(server, null);
        byte[] hello = WriteHelloFrame(FrameType.Hello, new HandshakeSettings(ProtocolConstants.Version, 4 * 1024 * 1024, int.MaxValue, null));
        await peer.SendAsync(hello.AsMemory(0, hello.Length / 2)).AsTask().WaitAsync(TestHost.Patience);
        await Hosts.WaitUntilAsync(() => waiting.GetStatistics().Reads > 0, "the server to read the half Hello");

        clock.Advance(JustUnder);
        Assert.False(waiting.IsClosed, $"The connection was closed ({waiting.CloseReason}) before its handshake timeout.");
        Assert.False(peer.Poll(0, SelectMode.SelectRead), "The peer saw the connection end before the handshake timeout.");

        clock.Advance(TimeSpan.FromMilliseconds(1));
        await AssertClosedByServerAsync(peer);
        await waiting.Completion.WaitAsync(TestHost.Patience);
        Assert.Equal(MuxCloseReason.HandshakeTimeout, waiting.CloseReason);
        AssertClosedForTheTimeoutWasLogged(logs, waiting);
        Assert.Equal(0L, waiting.GetStatistics().FramesReceived); // Half a frame is no frame.
    }

    [Fact]
    public async Task AHandshakeCompletedJustBeforeTheTimeout_KeepsTheConnectionOpenPastIt()
    {
        var clock = new FakeTimeProvider();
        (MuxServer server, TestService _) = await KeepAliveTests.StartServerAsync(Options(clock, null));
        await using MuxServer __ = server;
        await using RawMuxPeer peer = await RawMuxPeer.ConnectAsync(server.LocalEndPoint!);
        ServerConnection connection = await NextConnectionAsync(server, null);

        clock.Advance(JustUnder);
        await peer.HandshakeAsync(); // Answered: the connection was open just under the timeout.
        clock.Advance(HandshakeTimeout);

        await peer.SendAsync(RawMuxPeer.AddRequest(1, 20, 22));
        ReceivedFrame answer = await peer.ExpectFrameAsync();
        Assert.Equal((FrameType.Response, 1u), (answer.Type, answer.CallId));
        Assert.Equal(42, MessagePack.MessagePackSerializer.Deserialize<int>(answer.Payload));
        Assert.False(connection.IsClosed, $"A connection whose handshake was done was closed ({connection.CloseReason}).");
    }

    [Fact]
    public async Task OverTls_APeerThatNeverStartsTheTlsHandshake_IsClosedAtTheTimeout_NotBefore_AndTheTimeoutIsLogged_WhileATlsClientsCallsGoOn()
    {
        var clock = new FakeTimeProvider();
        using var logs = new FakeLoggerProvider();
        using ILoggerFactory loggerFactory = LoggerFactory.Create(builder => builder.AddProvider(logs));
        MuxServerOptions options = Options(clock, loggerFactory);
        options.Tls = TestCertificates.ServerTls();
        (MuxServer server, TestService _) = await KeepAliveTests.StartServerAsync(options);
        await using MuxServer __ = server;

        // The silent peer first, so that the client's TLS handshake below runs while its timeout is
        // (fake) minutes old.
        using Socket silent = await ConnectAsync(server);
        await Hosts.WaitUntilAsync(() => server.ConnectionsAccepted == 1, "the server to accept the silent peer");
        clock.Advance(JustUnder);

        await using MuxClient client = await MuxClient.ConnectAsync(server.LocalEndPoint!, new MuxClientOptions { Tls = TestCertificates.ClientTlsTrusting() }).WaitAsync(TestHost.Patience);
        ITestService proxy = client.CreateProxy<ITestService>();
        Assert.Equal(3, await proxy.Add(1, 2).AsTask().WaitAsync(TestHost.Patience));
        Assert.False(silent.Poll(0, SelectMode.SelectRead), "The silent peer saw the connection end before the handshake timeout.");
        Assert.DoesNotContain(logs.Collector.GetSnapshot(), r => r.Id.Id == 50);

        clock.Advance(TimeSpan.FromMilliseconds(1));
        await AssertClosedByServerAsync(silent);
        await Hosts.WaitUntilAsync(() => logs.Collector.GetSnapshot().Any(r => r.Id.Id == 50), "the server to log the failed TLS handshake");
        FakeLogRecord failed = logs.Collector.GetSnapshot().Single(r => r.Id.Id == 50);
        Assert.Equal(LogLevel.Information, failed.Level);
        Assert.Equal("The client did not complete the TLS handshake within 5 min (MuxServerOptions.HandshakeTimeout).", Assert.IsType<TimeoutException>(failed.Exception).Message);

        Assert.Equal(1, server.ActiveConnections); // Only the TLS client's: the silent peer never got that far.
        Assert.Equal(7, await proxy.Add(3, 4).AsTask().WaitAsync(TestHost.Patience));
    }

    private static MuxServerOptions Options(FakeTimeProvider clock, ILoggerFactory? loggerFactory) => new()
    {
        EndPoint = new IPEndPoint(IPAddress.Loopback, 0),
        TimeProvider = clock,
        HandshakeTimeout = HandshakeTimeout,
        KeepAliveInterval = Timeout.InfiniteTimeSpan, // Only the handshake timeout is at work.
        LoggerFactory = loggerFactory,
    };

    private static async Task<Socket> ConnectAsync(MuxServer server)
    {
        var socket = new Socket(AddressFamily.InterNetwork, SocketType.Stream, ProtocolType.Tcp) { NoDelay = true };
        await socket.ConnectAsync(server.LocalEndPoint!).WaitAsync(TestHost.Patience);
        return socket;
    }

    /// <summary>The server's connection other than <paramref name="known"/>, once it has one: the
    /// fake clock must not move before the server has accepted the peer (the timeout counts from then).</summary>
    private static async Task<ServerConnection> NextConnectionAsync(MuxServer server, ServerConnection? known)
    {
        ServerConnection? found = null;
        await Hosts.WaitUntilAsync(() => (found = server.Connections.FirstOrDefault(c => c != known)) is not null, "the server to accept the peer");
        return found!;
    }

    /// <summary>Reads until the server ends the connection (end of stream or reset), failing after
    /// <see cref="TestHost.Patience"/>; the server sends nothing before.</summary>
    private static async Task AssertClosedByServerAsync(Socket socket)
    {
        byte[] buffer = new byte[1024];
        using var patience = new CancellationTokenSource(TestHost.Patience);
        try
        {
            int received = await socket.ReceiveAsync(buffer, SocketFlags.None, patience.Token);
            Assert.Equal(0, received);
        }
        catch (SocketException ex) when (ex.SocketErrorCode is SocketError.ConnectionReset or SocketError.ConnectionAborted)
        {
            // An abortive close: as good as an end of stream here.
        }
        catch (OperationCanceledException) when (patience.IsCancellationRequested)
        {
            Assert.Fail($"The server did not close the connection within {TestHost.Patience}.");
        }
    }

    private static void AssertClosedForTheTimeoutWasLogged(FakeLoggerProvider logs, ServerConnection connection)
    {
        FakeLogRecord closed = Assert.Single(logs.Collector.GetSnapshot(), r => r.Id.Id == 1 && r.Message.Contains(connection.Name, StringComparison.Ordinal));
        Assert.Equal(LogLevel.Warning, closed.Level);
        Assert.Equal($"Connection {connection.Name} closed: HandshakeTimeout.", closed.Message);
        Assert.Equal("The client did not complete the handshake within 5 min (MuxServerOptions.HandshakeTimeout).", Assert.IsType<TimeoutException>(closed.Exception).Message);
    }
}
