using System.Net;
using Microsoft.Extensions.Configuration;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Options;

namespace Mux.Hosting.Tests;

public sealed class ConfigurationTests
{
    private static IHost Build(Dictionary<string, string?> configuration, Action<MuxServerOptions>? server = null, Action<MuxClientOptions>? client = null)
    {
        (HostApplicationBuilder builder, _) = TestHost.CreateBuilder(configuration);
        builder.Services.AddMuxServer(server);
        builder.Services.AddMuxClient(client);
        return builder.Build();
    }

    [Fact]
    public void ServerOptionsAreBoundFromMuxServer()
    {
        using IHost host = Build(new()
        {
            ["Mux:Server:Listen"] = "127.0.0.1:0",
            ["Mux:Server:MaxConcurrentCallsPerConnection"] = "7",
            ["Mux:Server:MaxFrameSize"] = "65536",
            ["Mux:Server:HandshakeTimeout"] = "00:00:03",
            ["Mux:Server:ListenBacklog"] = "16",
            ["Mux:Server:AuthToken"] = "s3cret",
        });

        MuxServerOptions options = host.Services.GetRequiredService<IOptions<MuxServerOptions>>().Value;
        Assert.Equal(new IPEndPoint(IPAddress.Loopback, 0), options.EndPoint);
        Assert.Equal(7, options.MaxConcurrentCallsPerConnection);
        Assert.Equal(65536, options.MaxFrameSize);
        Assert.Equal(TimeSpan.FromSeconds(3), options.HandshakeTimeout);
        Assert.Equal(16, options.ListenBacklog);
        Assert.Equal("s3cret", options.AuthToken);
        Assert.Same(host.Services.GetRequiredService<ILoggerFactory>(), options.LoggerFactory);
    }

    [Fact]
    public void ClientOptionsAreBoundFromMuxClient()
    {
        using IHost host = Build(new()
        {
            ["Mux:Client:Connect"] = "127.0.0.1:5000",
            ["Mux:Client:CallTimeout"] = "00:00:07",
            ["Mux:Client:ConnectTimeout"] = "00:00:02",
            ["Mux:Client:MaxFrameSize"] = "8192",
            ["Mux:Client:AuthToken"] = "s3cret",
        });

        MuxClientOptions options = host.Services.GetRequiredService<IOptions<MuxClientOptions>>().Value;
        Assert.Equal(new IPEndPoint(IPAddress.Loopback, 5000), options.EndPoint);
        Assert.Equal(TimeSpan.FromSeconds(7), options.CallTimeout);
        Assert.Equal(TimeSpan.FromSeconds(2), options.ConnectTimeout);
        Assert.Equal(8192, options.MaxFrameSize);
        Assert.Equal("s3cret", options.AuthToken);
        Assert.Same(host.Services.GetRequiredService<ILoggerFactory>(), options.LoggerFactory);
    }

    [Fact]
    public void ConnectionLimitsAndKeepaliveAreBoundFromBothSections()
    {
        using IHost host = Build(new()
        {
            ["Mux:Server:MaxOutboundBytesPerConnection"] = "65536",
            ["Mux:Server:ShutdownTimeout"] = "00:00:05",
            ["Mux:Server:KeepAliveInterval"] = "00:01:00",
            ["Mux:Server:KeepAliveTimeout"] = "00:00:10",
            ["Mux:Server:IdleTimeout"] = "00:05:00",
            ["Mux:Client:MaxOutboundBytesPerConnection"] = "131072",
            ["Mux:Client:KeepAliveInterval"] = "00:00:15",
            ["Mux:Client:KeepAliveTimeout"] = "-00:00:00.001", // Timeout.InfiniteTimeSpan
        });

        MuxServerOptions server = host.Services.GetRequiredService<IOptions<MuxServerOptions>>().Value;
        Assert.Equal(65536, server.MaxOutboundBytesPerConnection);
        Assert.Equal(TimeSpan.FromSeconds(5), server.ShutdownTimeout);
        Assert.Equal(TimeSpan.FromMinutes(1), server.KeepAliveInterval);
        Assert.Equal(TimeSpan.FromSeconds(10), server.KeepAliveTimeout);
        Assert.Equal(TimeSpan.FromMinutes(5), server.IdleTimeout);

        MuxClientOptions client = host.Services.GetRequiredService<IOptions<MuxClientOptions>>().Value;
        Assert.Equal(131072, client.MaxOutboundBytesPerConnection);
        Assert.Equal(TimeSpan.FromSeconds(15), client.KeepAliveInterval);
        Assert.Equal(Timeout.InfiniteTimeSpan, client.KeepAliveTimeout);
    }

    [Fact]
    public void StreamWindowIsBoundFromBothSections_AndDefaultsTo64()
    {
        using IHost host = Build(new()
        {
            ["Mux:Server:StreamWindow"] = "16",
            ["Mux:Client:StreamWindow"] = "256",
        });

        Assert.Equal(16, host.Services.GetRequiredService<IOptions<MuxServerOptions>>().Value.StreamWindow);
        Assert.Equal(256, host.Services.GetRequiredService<IOptions<MuxClientOptions>>().Value.StreamWindow);

        using IHost defaults = Build([]);
        Assert.Equal(64, defaults.Services.GetRequiredService<IOptions<MuxServerOptions>>().Value.StreamWindow);
        Assert.Equal(64, defaults.Services.GetRequiredService<IOptions<MuxClientOptions>>().Value.StreamWindow);
    }

    [Fact]
    public void CallContextPropagationAndClientCallTimeoutAreBoundFromTheServerSection_AndDefaultToOffAnd30Seconds()
    {
        using IHost host = Build(new()
        {
            ["Mux:Server:EnableCallContextPropagation"] = "true",
            ["Mux:Server:ClientCallTimeout"] = "00:00:05",
        });

        MuxServerOptions server = host.Services.GetRequiredService<IOptions<MuxServerOptions>>().Value;
        Assert.True(server.EnableCallContextPropagation);
        Assert.Equal(TimeSpan.FromSeconds(5), server.ClientCallTimeout);

        using IHost defaults = Build([]);
        MuxServerOptions unset = defaults.Services.GetRequiredService<IOptions<MuxServerOptions>>().Value;
        Assert.False(unset.EnableCallContextPropagation);
        Assert.Equal(TimeSpan.FromSeconds(30), unset.ClientCallTimeout);
    }

    [Fact]
    public void TheCallPipelinesKeysAreBound_MaxMetadataSizeOnBothSides_AndTheClientsWaitForConnection()
    {
        using IHost host = Build(new()
        {
            ["Mux:Server:MaxMetadataSize"] = "1024",
            ["Mux:Client:MaxMetadataSize"] = "2048",
            ["Mux:Client:WaitForConnection"] = "false",
        });

        Assert.Equal(1024, host.Services.GetRequiredService<IOptions<MuxServerOptions>>().Value.MaxMetadataSize);
        MuxClientOptions client = host.Services.GetRequiredService<IOptions<MuxClientOptions>>().Value;
        Assert.Equal(2048, client.MaxMetadataSize);
        Assert.False(client.WaitForConnection);

        using IHost defaults = Build([]);
        Assert.Equal(8 * 1024, defaults.Services.GetRequiredService<IOptions<MuxServerOptions>>().Value.MaxMetadataSize);
        MuxClientOptions unset = defaults.Services.GetRequiredService<IOptions<MuxClientOptions>>().Value;
        Assert.Equal(8 * 1024, unset.MaxMetadataSize);
        Assert.True(unset.WaitForConnection);
    }

    [Fact]
    public void MissingKeysKeepTheDefaults()
    {
        using IHost host = Build([]);

        MuxServerOptions server = host.Services.GetRequiredService<IOptions<MuxServerOptions>>().Value;
        var serverDefaults = new MuxServerOptions();
        Assert.Null(server.EndPoint);
        Assert.Equal(serverDefaults.MaxFrameSize, server.MaxFrameSize);
        Assert.Equal(serverDefaults.MaxConcurrentCallsPerConnection, server.MaxConcurrentCallsPerConnection);
        Assert.Equal(serverDefaults.HandshakeTimeout, server.HandshakeTimeout);
        Assert.Equal(serverDefaults.ListenBacklog, server.ListenBacklog);
        Assert.Null(server.AuthToken);
        Assert.Equal(serverDefaults.MaxOutboundBytesPerConnection, server.MaxOutboundBytesPerConnection);
        Assert.Equal(serverDefaults.KeepAliveInterval, server.KeepAliveInterval);
        Assert.Equal(serverDefaults.KeepAliveTimeout, server.KeepAliveTimeout);
        Assert.Equal(Timeout.InfiniteTimeSpan, server.IdleTimeout);

        MuxClientOptions client = host.Services.GetRequiredService<IOptions<MuxClientOptions>>().Value;
        var clientDefaults = new MuxClientOptions();
        Assert.Null(client.EndPoint);
        Assert.Equal(clientDefaults.CallTimeout, client.CallTimeout);
        Assert.Equal(clientDefaults.ConnectTimeout, client.ConnectTimeout);
        Assert.Equal(clientDefaults.MaxFrameSize, client.MaxFrameSize);
        Assert.Equal(clientDefaults.MaxOutboundBytesPerConnection, client.MaxOutboundBytesPerConnection);
        Assert.Equal(clientDefaults.KeepAliveInterval, client.KeepAliveInterval);
        Assert.Equal(clientDefaults.KeepAliveTimeout, client.KeepAliveTimeout);
    }

    [Fact]
    public async Task AReloadedMuxSection_ChangesNothingRunning_ItsOptionsAreReadOnceWhenTheHostStarts()
    {
        await using TestHost first = await TestHost.StartServerAsync();
        await using TestHost second = await TestHost.StartServerAsync();
        var reloadable = new ReloadableConfiguration(("Mux:Client:Connect", first.ServerEndPoint.ToString()), ("Mux:Client:CallTimeout", "00:00:07"));
        (HostApplicationBuilder builder, LogSink logs) = TestHost.CreateBuilder();
        ((IConfigurationBuilder)builder.Configuration).Add(reloadable);
        builder.Services.AddMuxClient().AddProxy<IHostingTestService>();
        await using TestHost client = await TestHost.StartAsync(builder, logs);
        MuxClient muxClient = client.Services.GetRequiredService<MuxClient>();
        await TestHost.WaitUntilAsync(() => muxClient.State == MuxClientState.Connected, "the client connects");

        reloadable.Replace(("Mux:Client:Connect", second.ServerEndPoint.ToString()), ("Mux:Client:CallTimeout", "00:00:09"));

        // As the docs say: the running client keeps the options it started with, and so do the
        // options it was made from; the new values apply when the host starts again.
        Assert.Equal(5, await client.Services.GetRequiredService<IHostingTestService>().Add(2, 3).AsTask().WaitAsync(TestHost.Patience));
        Assert.Same(muxClient, client.Services.GetRequiredService<MuxClient>());
        Assert.Equal(first.ServerEndPoint, muxClient.RemoteEndPoint);
        Assert.Equal(TimeSpan.FromSeconds(7), client.Services.GetRequiredService<IOptions<MuxClientOptions>>().Value.CallTimeout);
        Assert.Equal(0, second.Services.GetRequiredService<MuxServer>().ActiveConnections);
    }

    [Fact]
    public void CodeWinsOverConfiguration()
    {
        using IHost host = Build(
            new()
            {
                ["Mux:Server:Listen"] = "127.0.0.1:5000",
                ["Mux:Server:MaxFrameSize"] = "65536",
                ["Mux:Server:MaxConcurrentCallsPerConnection"] = "7",
                ["Mux:Client:Connect"] = "127.0.0.1:5000",
                ["Mux:Client:CallTimeout"] = "00:00:07",
            },
            server: o =>
            {
                o.Listen(IPAddress.IPv6Loopback, 6000);
                o.MaxFrameSize = 8192;
            },
            client: o => o.EndPoint = new IPEndPoint(IPAddress.IPv6Loopback, 6000));

        MuxServerOptions server = host.Services.GetRequiredService<IOptions<MuxServerOptions>>().Value;
        Assert.Equal(new IPEndPoint(IPAddress.IPv6Loopback, 6000), server.EndPoint);
        Assert.Equal(8192, server.MaxFrameSize);
        Assert.Equal(7, server.MaxConcurrentCallsPerConnection); // Not set in code: configuration applies.

        MuxClientOptions client = host.Services.GetRequiredService<IOptions<MuxClientOptions>>().Value;
        Assert.Equal(new IPEndPoint(IPAddress.IPv6Loopback, 6000), client.EndPoint);
        Assert.Equal(TimeSpan.FromSeconds(7), client.CallTimeout);
    }

    [Fact]
    public void WithoutConfigurationInTheContainerOnlyCodeAndDefaultsApply()
    {
        var services = new ServiceCollection();
        services.AddMuxServer(o => o.Listen(IPAddress.Loopback, 5000));
        using ServiceProvider provider = services.BuildServiceProvider();

        MuxServerOptions options = provider.GetRequiredService<IOptions<MuxServerOptions>>().Value;
        Assert.Equal(new IPEndPoint(IPAddress.Loopback, 5000), options.EndPoint);
        Assert.Null(options.LoggerFactory);
    }

    [Theory]
    [InlineData("127.0.0.1:5000", "127.0.0.1:5000")]
    [InlineData("[::1]:5000", "[::1]:5000")]
    [InlineData("0.0.0.0:5000", "0.0.0.0:5000")]
    [InlineData("[::]:0", "[::]:0")]
    [InlineData("localhost:5000", "127.0.0.1:5000")]
    [InlineData(" LocalHost:5000 ", "127.0.0.1:5000")]
    public void ListenIsParsedIntoAnIPEndPoint(string listen, string expected)
    {
        using IHost host = Build(new() { ["Mux:Server:Listen"] = listen });
        EndPoint? endPoint = host.Services.GetRequiredService<IOptions<MuxServerOptions>>().Value.EndPoint;
        Assert.Equal(IPEndPoint.Parse(expected), Assert.IsType<IPEndPoint>(endPoint));
    }

    [Theory]
    [InlineData("127.0.0.1:5000", "127.0.0.1", 5000)]
    [InlineData("[::1]:5000", "::1", 5000)]
    [InlineData("localhost:5000", null, 5000)]
    [InlineData("users.internal:6000", null, 6000)]
    public void ConnectIsParsedIntoAnEndPoint(string connect, string? ipAddress, int port)
    {
        using IHost host = Build(new() { ["Mux:Client:Connect"] = connect });
        EndPoint? endPoint = host.Services.GetRequiredService<IOptions<MuxClientOptions>>().Value.EndPoint;
        if (ipAddress is not null)
        {
            Assert.Equal(new IPEndPoint(IPAddress.Parse(ipAddress), port), endPoint);
        }
        else
        {
            var dns = Assert.IsType<DnsEndPoint>(endPoint);
            Assert.Equal(connect[..connect.IndexOf(':', StringComparison.Ordinal)], dns.Host);
            Assert.Equal(port, dns.Port);
        }
    }

    [Theory]
    [InlineData("5000")]
    [InlineData("127.0.0.1")]
    [InlineData("127.0.0.1:")]
    [InlineData(":5000")]
    [InlineData("::1:5000")]
    [InlineData("[127.0.0.1]:5000")]
    [InlineData("127.0.0.1:65536")]
    [InlineData("127.0.0.1:-1")]
    [InlineData("127.0.0.1:http")]
    [InlineData("example.com:5000")]
    public void AnInvalidListenValueNamesTheKey(string listen)
    {
        using IHost host = Build(new() { ["Mux:Server:Listen"] = listen });
        var error = Assert.Throws<InvalidOperationException>(() => host.Services.GetRequiredService<IOptions<MuxServerOptions>>().Value);
        Assert.Contains("Mux:Server:Listen", error.Message, StringComparison.Ordinal);
        Assert.Contains($"'{listen}'", error.Message, StringComparison.Ordinal);
    }

    [Theory]
    [InlineData("localhost")]
    [InlineData("127.0.0.1:0")]
    [InlineData("::1:5000")]
    [InlineData("bad host:5000")]
    [InlineData("10.0.0.256:5000")] // Not an IPv4 address, and a name must not be all digits: the old code looked it up in DNS.
    [InlineData("10.0.0.1.5:5000")]
    [InlineData("http://localhost:5000/mux")]
    [InlineData("ws:/localhost/mux")]
    public void AnInvalidConnectValueNamesTheKey(string connect)
    {
        using IHost host = Build(new() { ["Mux:Client:Connect"] = connect });
        var error = Assert.Throws<InvalidOperationException>(() => host.Services.GetRequiredService<IOptions<MuxClientOptions>>().Value);
        Assert.Contains("Mux:Client:Connect", error.Message, StringComparison.Ordinal);
    }

    [Theory]
    [InlineData("ws://localhost:5000/mux", "localhost", 5000)]
    [InlineData("wss://users.internal/mux", "users.internal", 443)]
    public void AWebSocketUriInConnect_IsAWebSocketEndPoint(string connect, string hostName, int port)
    {
        using IHost host = Build(new() { ["Mux:Client:Connect"] = connect });

        var endPoint = Assert.IsType<MuxWebSocketEndPoint>(host.Services.GetRequiredService<IOptions<MuxClientOptions>>().Value.EndPoint);
        Assert.Equal(new Uri(connect), endPoint.Uri);
        Assert.Equal(hostName, endPoint.Host);
        Assert.Equal(port, endPoint.Port);
    }

    [Fact]
    public async Task AnInvalidListenValueFailsTheHostStart()
    {
        (HostApplicationBuilder builder, LogSink logs) = TestHost.CreateBuilder(new Dictionary<string, string?> { ["Mux:Server:Listen"] = "nowhere" });
        builder.Services.AddMuxServer().AddService<IHostingTestService, HostingTestService>();
        var error = await Assert.ThrowsAsync<InvalidOperationException>(() => TestHost.StartAsync(builder, logs));
        Assert.Contains("Mux:Server:Listen", error.Message, StringComparison.Ordinal);
    }

    [Fact]
    public async Task TheServerListensWhereConfigurationSays()
    {
        await using TestHost server = await TestHost.StartServerAsync(configuration: new()
        {
            ["Mux:Server:Listen"] = "localhost:0",
            ["Mux:Server:MaxConcurrentCallsPerConnection"] = "3",
        });

        Assert.Equal(IPAddress.Loopback, server.ServerEndPoint.Address);
        Assert.NotEqual(0, server.ServerEndPoint.Port);

        await using TestHost client = await TestHost.StartClientAsync(server.ServerEndPoint, new() { ["Mux:Client:CallTimeout"] = "00:00:10" });
        Assert.Equal(TimeSpan.FromSeconds(10), client.Services.GetRequiredService<IOptions<MuxClientOptions>>().Value.CallTimeout);
        Assert.Equal(9, await client.Services.GetRequiredService<IHostingTestService>().Add(4, 5));
    }
}
