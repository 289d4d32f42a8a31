using System.IO.Pipelines;
using System.IO.Pipes;
using System.Net;
using System.Net.Sockets;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Logging.Testing;
using Mux.Tests.Infrastructure;
using Mux.Tests.Security;

namespace Mux.Tests.Transport;

public sealed class AnyTransportTests : IDisposable
{
    private readonly string _directory = Directory.CreateTempSubdirectory("mux-uds-").FullName;

    public void Dispose() => Directory.Delete(_directory, recursive: true);

    private static MuxServer CreateServer(MuxServerOptions options)
    {
        var server = new MuxServer(options);
        server.AddService<ITestService>(new TestService());
        return server;
    }

    [Fact]
    public async Task AUnixDomainSocketEndPoint_ServesCalls_AndItsFileIsRemovedWhenTheServerStops()
    {
        string path = Path.Combine(_directory, "mux.sock");
        var endPoint = new UnixDomainSocketEndPoint(path);
        MuxServer server = CreateServer(new MuxServerOptions { EndPoint = endPoint });
        await server.StartAsync();
        Assert.True(File.Exists(path));

        await using (MuxClient client = await MuxClient.ConnectAsync(endPoint))
        {
            ITestService proxy = client.CreateProxy<ITestService>();
            Task<int>[] calls = Enumerable.Range(0, 200).Select(i => proxy.Add(i, i).AsTask()).ToArray();
            Assert.Equal(Enumerable.Range(0, 200).Select(i => 2 * i), await Task.WhenAll(calls).WaitAsync(TestHost.Patience));
            Assert.Equal("over a unix socket", await proxy.Echo("over a unix socket").WaitAsync(TestHost.Patience));
            Assert.Equal(1, server.ActiveConnections);
        }

        await server.StopAsync(new CancellationTokenSource(TestHost.Patience).Token);
        Assert.False(File.Exists(path));

        // The same path can be bound again by the next server.
        await using MuxServer again = CreateServer(new MuxServerOptions { EndPoint = endPoint });
        await again.StartAsync();
        await using MuxClient second = await MuxClient.ConnectAsync(endPoint);
        Assert.Equal(3, await second.CreateProxy<ITestService>().Add(1, 2).AsTask().WaitAsync(TestHost.Patience));
    }

    [Fact]
    public async Task AUnixDomainSocket_CarriesTls_Too()
    {
        var endPoint = new UnixDomainSocketEndPoint(Path.Combine(_directory, "tls.sock"));
        await using MuxServer server = CreateServer(new MuxServerOptions { EndPoint = endPoint, Tls = TestCertificates.ServerTls() });
        await server.StartAsync();

        await using MuxClient client = await MuxClient.ConnectAsync(endPoint, new MuxClientOptions { Tls = TestCertificates.ClientTlsTrusting() });

        Assert.Equal(10, await client.CreateProxy<ITestService>().Add(4, 6).AsTask().WaitAsync(TestHost.Patience));
    }

    [Fact]
    public async Task Connect_ToAUnixSocketPathWhereNobodyListens_FailsWithMuxConnectionException()
    {
        var endPoint = new UnixDomainSocketEndPoint(Path.Combine(_directory, "nobody.sock"));

        var error = await Assert.ThrowsAsync<MuxConnectionException>(() => MuxClient.ConnectAsync(endPoint).WaitAsync(TestHost.Patience));

        Assert.Contains("nobody.sock", error.Message, StringComparison.Ordinal);
        Assert.IsType<SocketException>(error.InnerException);
    }

    [Fact]
    public async Task AnAuthToken_OverAUnixSocket_LogsNoPlaintextWarning()
    {
        using var logs = new FakeLoggerProvider();
        using var loggerFactory = LoggerFactory.Create(b => b.AddProvider(logs));
        var endPoint = new UnixDomainSocketEndPoint(Path.Combine(_directory, "token.sock"));
        await using MuxServer server = CreateServer(new MuxServerOptions { EndPoint = endPoint, AuthToken = "local", LoggerFactory = loggerFactory });
        await server.StartAsync();

        await using MuxClient client = await MuxClient.ConnectAsync(endPoint, new MuxClientOptions { AuthToken = "local", LoggerFactory = loggerFactory });

        Assert.Equal(2, await client.CreateProxy<ITestService>().Add(1, 1).AsTask().WaitAsync(TestHost.Patience));
        Assert.DoesNotContain(logs.Collector.GetSnapshot(), r => r.Id.Id == 51);
    }

    [Fact]
    public async Task AStreamTheUserConnected_CarriesAClientAndAServer()
    {
        // Any Stream works; an anonymous pipe pair stands in for a tunnel or a serial line.
        using var listener = new Socket(AddressFamily.InterNetwork, SocketType.Stream, ProtocolType.Tcp);
        listener.Bind(new IPEndPoint(IPAddress.Loopback, 0));
        listener.Listen(1);
        var dialer = new Socket(AddressFamily.InterNetwork, SocketType.Stream, ProtocolType.Tcp);
        Task<Socket> accepting = listener.AcceptAsync();
        await dialer.ConnectAsync(listener.LocalEndPoint!);
        Socket accepted = await accepting.WaitAsync(TestHost.Patience);

        await using MuxServer server = CreateServer(new MuxServerOptions()); // No endpoint: it only serves what it is handed.
        await server.AcceptAsync(new NetworkStream(accepted, ownsSocket: true));
        await using MuxClient client = await MuxClient.ConnectAsync(new NetworkStream(dialer, ownsSocket: true));
        ITestService proxy = client.CreateProxy<ITestService>();

        Task<int>[] calls = Enumerable.Range(0, 100).Select(i => proxy.Add(i, 1).AsTask()).ToArray();
        Assert.Equal(Enumerable.Range(1, 100), await Task.WhenAll(calls).WaitAsync(TestHost.Patience));
        Assert.Equal(1, server.ActiveConnections);
        Assert.Equal(1, server.ConnectionsAccepted);
        Assert.Null(client.RemoteEndPoint);
    }

    [Fact]
    public async Task AStreamThatIsNotASocket_CarriesMux_AndClosingTheClientClosesTheServersConnection()
    {
        using var serverToClient = new AnonymousPipeServerStream(PipeDirection.Out);
        using var clientFromServer = new AnonymousPipeClientStream(PipeDirection.In, serverToClient.ClientSafePipeHandle);
        using var clientToServer = new AnonymousPipeServerStream(PipeDirection.Out);
        using var serverFromClient = new AnonymousPipeClientStream(PipeDirection.In, clientToServer.ClientSafePipeHandle);

        await using MuxServer server = CreateServer(new MuxServerOptions());
        await server.AcceptAsync(new DuplexStream(serverFromClient, serverToClient));
        MuxClient client = await MuxClient.ConnectAsync(new DuplexStream(clientFromServer, clientToServer));

        Assert.Equal("piped", await client.CreateProxy<ITestService>().Echo("piped").WaitAsync(TestHost.Patience));

        await client.DisposeAsync();
        await Hosts.WaitUntilAsync(() => server.ActiveConnections == 0, "the server saw the client's stream end");
    }

    [Fact]
    public async Task TlsOverAUserStream_IsAuthenticatedWithTheOptions()
    {
        using var listener = new Socket(AddressFamily.InterNetwork, SocketType.Stream, ProtocolType.Tcp);
        listener.Bind(new IPEndPoint(IPAddress.Loopback, 0));
        listener.Listen(1);
        var dialer = new Socket(AddressFamily.InterNetwork, SocketType.Stream, ProtocolType.Tcp);
        Task<Socket> accepting = listener.AcceptAsync();
        await dialer.ConnectAsync(listener.LocalEndPoint!);
        Socket accepted = await accepting.WaitAsync(TestHost.Patience);

        await using MuxServer server = CreateServer(new MuxServerOptions { Tls = TestCertificates.ServerTls() });
        Task serving = server.AcceptAsync(new NetworkStream(accepted, ownsSocket: true));
        await using MuxClient client = await MuxClient.ConnectAsync(new NetworkStream(dialer, ownsSocket: true), new MuxClientOptions { Tls = TestCertificates.ClientTlsTrusting() });
        await serving.WaitAsync(TestHost.Patience);

        Assert.Equal(8, await client.CreateProxy<ITestService>().Add(5, 3).AsTask().WaitAsync(TestHost.Patience));
    }

    [Fact]
    public async Task ADuplexPipeTheUserProvides_CarriesAClientAndAServer()
    {
        var toServer = new Pipe();
        var toClient = new Pipe();
        await using MuxServer server = CreateServer(new MuxServerOptions());
        server.Accept(new PipePair(toServer.Reader, toClient.Writer));
        await using MuxClient client = await MuxClient.ConnectAsync(new PipePair(toClient.Reader, toServer.Writer));
        ITestService proxy = client.CreateProxy<ITestService>();

        Task<int>[] calls = Enumerable.Range(0, 100).Select(i => proxy.Add(i, -i).AsTask()).ToArray();

        Assert.All(await Task.WhenAll(calls).WaitAsync(TestHost.Patience), r => Assert.Equal(0, r));
        Assert.Equal(1, server.ActiveConnections);
    }

    [Fact]
    public async Task APipe_WithTlsConfigured_IsRefusedWithAMessageThatSaysToUseAStream()
    {
        var pipe = new Pipe();
        var client = new MuxClientOptions { Tls = TestCertificates.ClientTlsTrusting() };
        await using MuxServer server = CreateServer(new MuxServerOptions { Tls = TestCertificates.ServerTls() });

        var clientError = await Assert.ThrowsAsync<InvalidOperationException>(() => MuxClient.ConnectAsync(new PipePair(pipe.Reader, pipe.Writer), client));
        var serverError = Assert.Throws<InvalidOperationException>(() => server.Accept(new PipePair(pipe.Reader, pipe.Writer)));

        Assert.Contains("Stream", clientError.Message, StringComparison.Ordinal);
        Assert.Contains("AcceptAsync", serverError.Message, StringComparison.Ordinal);
    }

    [Fact]
    public async Task AStoppedServer_RefusesUserConnections()
    {
        MuxServer server = CreateServer(new MuxServerOptions());
        await server.StopAsync();
        var pipe = new Pipe();

        var error = Assert.Throws<ObjectDisposedException>(() => server.Accept(new PipePair(pipe.Reader, pipe.Writer)));

        Assert.Contains("stopp", error.Message, StringComparison.Ordinal);
    }

    private sealed class PipePair(PipeReader input, PipeWriter output) : IDuplexPipe
    {
        public PipeReader Input { get; } = input;

        public PipeWriter Output { get; } = output;
    }
}
