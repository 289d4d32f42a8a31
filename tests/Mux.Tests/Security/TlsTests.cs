using System.Net;
using System.Net.Security;
using System.Net.Sockets;
using System.Security.Authentication;
using System.Security.Claims;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Logging.Testing;
using Mux.Tests.Infrastructure;

namespace Mux.Tests.Security;

public sealed class TlsTests
{
    private static MuxServerOptions TlsServerOptions() => new()
    {
        EndPoint = new IPEndPoint(IPAddress.Loopback, 0),
        Tls = TestCertificates.ServerTls(),
    };

    private static async Task<MuxServer> StartServerAsync(MuxServerOptions options)
    {
        var server = new MuxServer(options);
        server.AddService<ITestService>(new TestService());
        await server.StartAsync();
        return server;
    }

    [Fact]
    public async Task Calls_OverTls_ReturnTheirResults_WhenTheClientTrustsTheServersCertificate()
    {
        await using MuxServer server = await StartServerAsync(TlsServerOptions());
        await using MuxClient client = await MuxClient.ConnectAsync(server.LocalEndPoint!, new MuxClientOptions { Tls = TestCertificates.ClientTlsTrusting() });
        ITestService proxy = client.CreateProxy<ITestService>();

        Assert.Equal(5, await proxy.Add(2, 3).AsTask().WaitAsync(TestHost.Patience));
        Assert.Equal("over tls", await proxy.Echo("over tls").WaitAsync(TestHost.Patience));
        byte[] large = await proxy.Bytes(300_000).WaitAsync(TestHost.Patience);
        Assert.Equal(300_000, large.Length);
        Assert.Equal(1, server.ActiveConnections);
    }

    [Fact]
    public async Task TargetHost_DefaultsToTheEndpointsAddress_SoAnIpCertificateNameMatches()
    {
        await using MuxServer server = await StartServerAsync(TlsServerOptions());
        SslClientAuthenticationOptions tls = TestCertificates.ClientTlsTrusting();
        tls.TargetHost = null;

        // The certificate names 127.0.0.1 among its subject alternative names.
        await using MuxClient client = await MuxClient.ConnectAsync(server.LocalEndPoint!, new MuxClientOptions { Tls = tls });

        Assert.Equal(7, await client.CreateProxy<ITestService>().Add(3, 4).AsTask().WaitAsync(TestHost.Patience));
        Assert.Null(tls.TargetHost); // The user's options object is left as it was.
        Assert.Null(tls.ApplicationProtocols);
    }

    [Fact]
    public async Task ManyConcurrentCalls_OverTls_AllComplete_AndEachFlushIsAtMostOneStreamWrite()
    {
        await using MuxServer server = await StartServerAsync(TlsServerOptions());
        await using MuxClient client = await MuxClient.ConnectAsync(server.LocalEndPoint!, new MuxClientOptions { Tls = TestCertificates.ClientTlsTrusting() });
        ITestService proxy = client.CreateProxy<ITestService>();

        Task<int>[] calls = Enumerable.Range(0, 500).Select(i => proxy.Add(i, 1).AsTask()).ToArray();
        int[] results = await Task.WhenAll(calls).WaitAsync(TestHost.Patience);

        Assert.Equal(Enumerable.Range(1, 500), results);
        MuxConnectionStatistics stats = client.GetStatistics();
        Assert.True(stats.FramesSent >= 501, $"{stats.FramesSent} frames sent");

        // Batching survives TLS: the frames of one flush go out in one write to the TLS stream (one
        // record, one socket send), never one write per frame or per buffer segment.
        Assert.True(stats.SocketSends <= stats.Flushes, $"{stats.SocketSends} stream writes for {stats.Flushes} flushes");
    }

    [Fact]
    public async Task Connect_WhenTheClientDoesNotTrustTheCertificate_FailsWithMuxConnectionExceptionThatSaysWhy()
    {
        await using MuxServer server = await StartServerAsync(TlsServerOptions());
        var untrusting = new MuxClientOptions { Tls = new SslClientAuthenticationOptions { TargetHost = "localhost" } };

        var error = await Assert.ThrowsAsync<MuxConnectionException>(() => MuxClient.ConnectAsync(server.LocalEndPoint!, untrusting).WaitAsync(TestHost.Patience));

        Assert.IsType<AuthenticationException>(error.InnerException);
        Assert.Contains("TLS handshake", error.Message, StringComparison.Ordinal);
        Assert.Contains("trusted", error.Message, StringComparison.Ordinal);
        Assert.Contains("RemoteCertificateValidationCallback", error.Message, StringComparison.Ordinal);

        // The server is unharmed: a client that trusts it still gets served.
        await using MuxClient trusting = await MuxClient.ConnectAsync(server.LocalEndPoint!, new MuxClientOptions { Tls = TestCertificates.ClientTlsTrusting() });
        Assert.Equal(3, await trusting.CreateProxy<ITestService>().Add(1, 2).AsTask().WaitAsync(TestHost.Patience));
    }

    [Fact]
    public async Task Connect_WhenTheCertificateNamesAnotherHost_FailsWithMuxConnectionException()
    {
        await using MuxServer server = await StartServerAsync(TlsServerOptions());
        var options = new MuxClientOptions { Tls = TestCertificates.ClientTlsTrusting(targetHost: "users.internal") };

        var error = await Assert.ThrowsAsync<MuxConnectionException>(() => MuxClient.ConnectAsync(server.LocalEndPoint!, options).WaitAsync(TestHost.Patience));

        Assert.IsType<AuthenticationException>(error.InnerException);
        Assert.Contains("'users.internal'", error.Message, StringComparison.Ordinal);
    }

    [Fact]
    public async Task ATlsClient_OfferingAnotherAlpnProtocol_IsRefusedInTheHandshake()
    {
        await using MuxServer server = await StartServerAsync(TlsServerOptions());
        using var socket = new Socket(AddressFamily.InterNetwork, SocketType.Stream, ProtocolType.Tcp);
        await socket.ConnectAsync(server.LocalEndPoint!);
        await using var ssl = new SslStream(new NetworkStream(socket, ownsSocket: false));
        SslClientAuthenticationOptions h2 = TestCertificates.ClientTlsTrusting();
        h2.ApplicationProtocols = [SslApplicationProtocol.Http2];

        Exception error = await Assert.ThrowsAnyAsync<Exception>(async () =>
        {
            await ssl.AuthenticateAsClientAsync(h2).WaitAsync(TestHost.Patience);

            // Had the handshake completed, the server must still have closed the connection.
            int read = await ssl.ReadAsync(new byte[1]).AsTask().WaitAsync(TestHost.Patience);
            Assert.Fail($"The server kept a connection that negotiated ALPN '{ssl.NegotiatedApplicationProtocol}' (read {read} bytes).");
        });

        Assert.True(error is AuthenticationException or IOException, error.ToString());
        await Hosts.WaitUntilAsync(() => server.ActiveConnections == 0, "the refused connection is not served");
    }

    [Fact]
    public async Task Connect_WhenTheTlsServerChoosesAnotherAlpnProtocol_FailsAndNamesIt()
    {
        using var listener = new Socket(AddressFamily.InterNetwork, SocketType.Stream, ProtocolType.Tcp);
        listener.Bind(new IPEndPoint(IPAddress.Loopback, 0));
        listener.Listen(1);
        Task serve = Task.Run(async () =>
        {
            using Socket accepted = await listener.AcceptAsync();
            await using var ssl = new SslStream(new NetworkStream(accepted, ownsSocket: false));
            await ssl.AuthenticateAsServerAsync(new SslServerAuthenticationOptions
            {
                ServerCertificate = TestCertificates.Server,
                ApplicationProtocols = [SslApplicationProtocol.Http2],
            });
            _ = await ssl.ReadAsync(new byte[1]); // Until the client gives up.
        });
        SslClientAuthenticationOptions tls = TestCertificates.ClientTlsTrusting();
        tls.ApplicationProtocols = [new SslApplicationProtocol("mux/1"), SslApplicationProtocol.Http2];

        var error = await Assert.ThrowsAsync<MuxConnectionException>(() => MuxClient.ConnectAsync(listener.LocalEndPoint!, new MuxClientOptions { Tls = tls }).WaitAsync(TestHost.Patience));

        Assert.Contains("\"mux/1\"", error.Message, StringComparison.Ordinal);
        Assert.Contains("\"h2\"", error.Message, StringComparison.Ordinal);
        await serve.WaitAsync(TestHost.Patience);
    }

    [Fact]
    public async Task ATlsClient_AgainstAPlaintextServer_FailsWithMuxConnectionException()
    {
        await using MuxServer server = await StartServerAsync(new MuxServerOptions { EndPoint = new IPEndPoint(IPAddress.Loopback, 0) });

        var error = await Assert.ThrowsAsync<MuxConnectionException>(() => MuxClient.ConnectAsync(server.LocalEndPoint!, new MuxClientOptions { Tls = TestCertificates.ClientTlsTrusting() }).WaitAsync(TestHost.Patience));

        Assert.Contains("TLS handshake", error.Message, StringComparison.Ordinal);
    }

    [Fact]
    public async Task APlaintextClient_AgainstATlsServer_FailsWithMuxConnectionException_AndTheServerKeepsServing()
    {
        await using MuxServer server = await StartServerAsync(TlsServerOptions());

        await Assert.ThrowsAsync<MuxConnectionException>(() => MuxClient.ConnectAsync(server.LocalEndPoint!, new MuxClientOptions { ConnectTimeout = TimeSpan.FromSeconds(5) }).WaitAsync(TestHost.Patience));

        await using MuxClient client = await MuxClient.ConnectAsync(server.LocalEndPoint!, new MuxClientOptions { Tls = TestCertificates.ClientTlsTrusting() });
        Assert.Equal(2, await client.CreateProxy<ITestService>().Add(1, 1).AsTask().WaitAsync(TestHost.Patience));
    }

    [Fact]
    public async Task ClientCertificates_WhenTheServerRequiresOne_AreCheckedByTheServersCallback()
    {
        MuxServerOptions options = TlsServerOptions();
        options.Tls!.ClientCertificateRequired = true;
        options.Tls.RemoteCertificateValidationCallback = (_, certificate, _, _) =>
            certificate is not null && certificate.GetCertHashString() == TestCertificates.Client.GetCertHashString();
        await using MuxServer server = await StartServerAsync(options);

        SslClientAuthenticationOptions withCertificate = TestCertificates.ClientTlsTrusting();
        withCertificate.ClientCertificates = [TestCertificates.Client];
        await using (MuxClient client = await MuxClient.ConnectAsync(server.LocalEndPoint!, new MuxClientOptions { Tls = withCertificate }))
        {
            Assert.Equal(9, await client.CreateProxy<ITestService>().Add(4, 5).AsTask().WaitAsync(TestHost.Patience));
        }

        // Without one, the server refuses: in the handshake, or (TLS 1.3 checks the client after the
        // client has finished) by closing the connection before the Mux handshake completes.
        await Assert.ThrowsAsync<MuxConnectionException>(() => MuxClient.ConnectAsync(server.LocalEndPoint!, new MuxClientOptions { Tls = TestCertificates.ClientTlsTrusting() }).WaitAsync(TestHost.Patience));
    }

    [Fact]
    public async Task TheClientsCertificate_ReachesAuthenticate_AsMuxConnectionInfoClientCertificate()
    {
        MuxServerOptions options = TlsServerOptions();
        options.Tls!.ClientCertificateRequired = true;
        options.Tls.RemoteCertificateValidationCallback = (_, certificate, _, _) => certificate is not null;
        var seen = new TaskCompletionSource<MuxConnectionInfo>(TaskCreationOptions.RunContinuationsAsynchronously);
        options.Authenticate = (connection, _) =>
        {
            seen.TrySetResult(connection);
            return ValueTask.FromResult<ClaimsPrincipal?>(new ClaimsPrincipal(new ClaimsIdentity("tls")));
        };
        await using MuxServer server = await StartServerAsync(options);

        SslClientAuthenticationOptions withCertificate = TestCertificates.ClientTlsTrusting();
        withCertificate.ClientCertificates = [TestCertificates.Client];
        await using MuxClient client = await MuxClient.ConnectAsync(server.LocalEndPoint!, new MuxClientOptions { Tls = withCertificate });

        MuxConnectionInfo connection = await seen.Task.WaitAsync(TestHost.Patience);
        Assert.NotNull(connection.ClientCertificate);
        Assert.Equal(TestCertificates.Client.GetCertHashString(), connection.ClientCertificate.GetCertHashString());
        Assert.IsType<IPEndPoint>(connection.RemoteEndPoint);
    }

    [Fact]
    public async Task AnAuthToken_WithoutTls_LogsAWarningOnce_OnTheServerAndTheClient()
    {
        using var logs = new FakeLoggerProvider();
        using var loggerFactory = LoggerFactory.Create(builder => builder.AddProvider(logs));
        await using MuxServer server = await StartServerAsync(new MuxServerOptions
        {
            EndPoint = new IPEndPoint(IPAddress.Loopback, 0),
            AuthToken = "s3cret",
            LoggerFactory = loggerFactory,
        });
        var clientOptions = new MuxClientOptions { AuthToken = "s3cret", LoggerFactory = loggerFactory };

        await using (MuxClient first = await MuxClient.ConnectAsync(server.LocalEndPoint!, clientOptions))
        await using (MuxClient second = await MuxClient.ConnectAsync(server.LocalEndPoint!, clientOptions))
        {
            Assert.Equal(2, await second.CreateProxy<ITestService>().Add(1, 1).AsTask().WaitAsync(TestHost.Patience));
        }

        FakeLogRecord[] warnings = logs.Collector.GetSnapshot().Where(r => r.Id.Id == 51).ToArray();
        Assert.Equal(2, warnings.Length);
        Assert.All(warnings, w => Assert.Equal(LogLevel.Warning, w.Level));
        Assert.Single(warnings, w => w.Message.StartsWith("MuxServerOptions.AuthToken is set but MuxServerOptions.Tls is not", StringComparison.Ordinal));
        Assert.Single(warnings, w => w.Message.StartsWith("MuxClientOptions.AuthToken is set but MuxClientOptions.Tls is not", StringComparison.Ordinal));
    }

    [Fact]
    public async Task AnAuthToken_WithTls_LogsNoPlaintextWarning_AndIsChecked()
    {
        using var logs = new FakeLoggerProvider();
        using var loggerFactory = LoggerFactory.Create(builder => builder.AddProvider(logs));
        MuxServerOptions options = TlsServerOptions();
        options.AuthToken = "s3cret";
        options.LoggerFactory = loggerFactory;
        await using MuxServer server = await StartServerAsync(options);

        await using (MuxClient client = await MuxClient.ConnectAsync(server.LocalEndPoint!, new MuxClientOptions { AuthToken = "s3cret", Tls = TestCertificates.ClientTlsTrusting(), LoggerFactory = loggerFactory }))
        {
            Assert.Equal(2, await client.CreateProxy<ITestService>().Add(1, 1).AsTask().WaitAsync(TestHost.Patience));
        }

        var refused = await Assert.ThrowsAsync<MuxConnectionException>(() => MuxClient.ConnectAsync(server.LocalEndPoint!, new MuxClientOptions { AuthToken = "wrong", Tls = TestCertificates.ClientTlsTrusting() }).WaitAsync(TestHost.Patience));
        Assert.Contains("auth token", refused.Message, StringComparison.Ordinal);
        Assert.DoesNotContain(logs.Collector.GetSnapshot(), r => r.Id.Id == 51);
    }

    [Fact]
    public async Task TlsOptions_WithoutAServerCertificate_FailTheStartWithAMessageThatSaysWhatToSet()
    {
        var server = new MuxServer(new MuxServerOptions { EndPoint = new IPEndPoint(IPAddress.Loopback, 0), Tls = new SslServerAuthenticationOptions() });

        var error = await Assert.ThrowsAsync<InvalidOperationException>(() => server.StartAsync());

        Assert.Contains("Tls.ServerCertificate", error.Message, StringComparison.Ordinal);
    }

    [Fact]
    public async Task TlsOptions_WithAnAlpnListThatLacksMux_FailTheConnectWithAMessageThatSaysWhatToSet()
    {
        var options = new MuxClientOptions { Tls = new SslClientAuthenticationOptions { ApplicationProtocols = [SslApplicationProtocol.Http2] } };

        var error = await Assert.ThrowsAsync<InvalidOperationException>(() => MuxClient.ConnectAsync(new IPEndPoint(IPAddress.Loopback, 1), options));

        Assert.Contains("ApplicationProtocols", error.Message, StringComparison.Ordinal);
        Assert.Contains("mux/1", error.Message, StringComparison.Ordinal);
    }
}
