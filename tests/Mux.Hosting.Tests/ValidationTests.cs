using System.Net;
using System.Net.Sockets;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Logging;

namespace Mux.Hosting.Tests;

public sealed class ValidationTests
{
    [Fact]
    public async Task AnInvalidMaxFrameSizeFailsTheServerStart()
    {
        var error = await Assert.ThrowsAsync<InvalidOperationException>(() =>
            TestHost.StartServerAsync(configuration: new() { ["Mux:Server:MaxFrameSize"] = "10" }));
        Assert.Contains("MuxServerOptions.MaxFrameSize is 10", error.Message, StringComparison.Ordinal);
    }

    [Fact]
    public async Task AnInvalidOptionSetInCodeFailsTheServerStart()
    {
        var error = await Assert.ThrowsAsync<InvalidOperationException>(() =>
            TestHost.StartServerAsync(configure: b => b.Services.AddMuxServer(o => o.MaxConcurrentCallsPerConnection = 0)));
        Assert.Contains("MaxConcurrentCallsPerConnection", error.Message, StringComparison.Ordinal);
    }

    [Fact]
    public async Task AServerWithoutAnEndPointFailsToStart()
    {
        (HostApplicationBuilder builder, LogSink logs) = TestHost.CreateBuilder();
        builder.Services.AddMuxServer().AddService<IHostingTestService, HostingTestService>();
        var error = await Assert.ThrowsAsync<InvalidOperationException>(() => TestHost.StartAsync(builder, logs));
        Assert.Contains("EndPoint", error.Message, StringComparison.Ordinal);
    }

    [Fact]
    public async Task AnInterfaceWithoutADispatcherFailsTheServerStart()
    {
        var error = await Assert.ThrowsAsync<InvalidOperationException>(() =>
            TestHost.StartServerAsync(configure: b => b.Services.AddMuxServer().AddService<INotAMuxService, NotAMuxService>()));
        Assert.Contains(typeof(INotAMuxService).FullName!, error.Message, StringComparison.Ordinal);
    }

    [Fact]
    public async Task AnInvalidCallTimeoutFailsTheClientStart()
    {
        await using TestHost server = await TestHost.StartServerAsync();
        var error = await Assert.ThrowsAsync<InvalidOperationException>(() =>
            TestHost.StartClientAsync(server.ServerEndPoint, new() { ["Mux:Client:CallTimeout"] = "-00:00:01" }));
        Assert.Contains("MuxClientOptions.CallTimeout", error.Message, StringComparison.Ordinal);
    }

    [Theory]
    [InlineData("Mux:Server:MaxFrameSize", "10", "MuxServerOptions.MaxFrameSize is 10;")]
    [InlineData("Mux:Server:HandshakeTimeout", "0", "MuxServerOptions.HandshakeTimeout is 00:00:00;")]
    [InlineData("Mux:Server:MaxConcurrentCallsPerConnection", "-3", "MuxServerOptions.MaxConcurrentCallsPerConnection is -3;")]
    [InlineData("Mux:Client:ResolveInterval", "-5", "MuxClientOptions.ResolveInterval is -5.00:00:00;")]
    [InlineData("Mux:Client:ConnectTimeout", "0", "MuxClientOptions.ConnectTimeout is 00:00:00;")]
    [InlineData("Mux:Client:MaxFrameSize", "10", "MuxClientOptions.MaxFrameSize is 10;")]
    [InlineData("mux:client:reconnectmaxdelay", "00:00:00.050", "MuxClientOptions.ReconnectMaxDelay (00:00:00.0500000) is shorter")]
    public async Task AnOutOfRangeConfigurationValue_FailsTheStartNamingTheKeyAndItsValue_AndTheOption(string key, string value, string option)
    {
        // The old message named only the option: a user who wrote the key in appsettings.json
        // had to know which option it binds to.
        Task start = key.StartsWith("Mux:Server:", StringComparison.OrdinalIgnoreCase)
            ? TestHost.StartServerAsync(configuration: new() { [key] = value })
            : StartServiceClientAsync(new() { [key] = value });

        var error = await Assert.ThrowsAsync<InvalidOperationException>(() => start);

        Assert.Contains($"{key} is '{value}'", error.Message, StringComparison.OrdinalIgnoreCase);
        Assert.Contains(option, error.Message, StringComparison.Ordinal);
    }

    [Fact]
    public async Task AnOutOfRangeValueSetInCode_IsNotBlamedOnTheKeyItReplaced()
    {
        var error = await Assert.ThrowsAsync<InvalidOperationException>(() => StartServiceClientAsync(
            new() { ["Mux:Client:ResolveInterval"] = "00:00:05" },
            o => o.ResolveInterval = TimeSpan.FromSeconds(-1)));

        Assert.StartsWith("MuxClientOptions.ResolveInterval is -00:00:01;", error.Message, StringComparison.Ordinal);
        Assert.DoesNotContain("Mux:Client", error.Message, StringComparison.Ordinal);
    }

    [Fact]
    public async Task AClientWithoutAnEndPointFailsToStart()
    {
        (HostApplicationBuilder builder, LogSink logs) = TestHost.CreateBuilder();
        builder.Services.AddMuxClient().AddProxy<IHostingTestService>();
        var error = await Assert.ThrowsAsync<InvalidOperationException>(() => TestHost.StartAsync(builder, logs));
        Assert.Contains("Mux:Client:Connect", error.Message, StringComparison.Ordinal);
    }

    [Fact]
    public async Task AClientGivenBothAServerAndAServiceName_FailsToStartNamingBothKeys()
    {
        await using TestHost server = await TestHost.StartServerAsync();

        // The old message spoke of EndPointResolver, which the configuration does not set.
        var error = await Assert.ThrowsAsync<InvalidOperationException>(() =>
            TestHost.StartClientAsync(server.ServerEndPoint, new() { ["Mux:Client:Service"] = "mux://users" }));

        Assert.Contains("Mux:Client:Service", error.Message, StringComparison.Ordinal);
        Assert.Contains("Mux:Client:Connect", error.Message, StringComparison.Ordinal);
        Assert.Contains("'mux://users'", error.Message, StringComparison.Ordinal);
    }

    [Fact]
    public async Task AnUnparsableValueFailsTheStartNamingTheKey()
    {
        var error = await Assert.ThrowsAsync<InvalidOperationException>(() =>
            TestHost.StartServerAsync(configuration: new() { ["Mux:Server:MaxFrameSize"] = "big" }));
        Assert.Contains("Mux:Server:MaxFrameSize", error.Message, StringComparison.Ordinal);
    }

    [Theory]
    [InlineData("Mux:Server:AuthToken")]
    [InlineData("Mux:Client:AuthToken")]
    public async Task AnEmptyAuthTokenFailsTheStartNamingTheKey(string key)
    {
        // An empty value (an environment variable or template left blank) is no token: the old
        // code took it as one, so such a server started and then refused every client that sent
        // none, at its handshake, naming no key.
        Func<Task<TestHost>> start = key.StartsWith("Mux:Server:", StringComparison.Ordinal)
            ? () => TestHost.StartServerAsync(configuration: new() { [key] = string.Empty })
            : async () => await TestHost.StartClientAsync(new IPEndPoint(IPAddress.Loopback, 1), new() { [key] = string.Empty }, waitForConnection: false);

        var error = await Assert.ThrowsAsync<InvalidOperationException>(async () => await (await start()).DisposeAsync());

        Assert.Contains($"{key} is ''", error.Message, StringComparison.Ordinal);
    }

    [Fact]
    public async Task APortInUseFailsTheServerStart_AndTheLogNamesTheEndPoint()
    {
        using var taken = new Socket(AddressFamily.InterNetwork, SocketType.Stream, ProtocolType.Tcp);
        taken.Bind(new IPEndPoint(IPAddress.Loopback, 0));
        taken.Listen();
        string endPoint = taken.LocalEndPoint!.ToString()!;
        (HostApplicationBuilder builder, LogSink logs) = TestHost.CreateBuilder(new Dictionary<string, string?> { ["Mux:Server:Listen"] = endPoint });
        builder.Services.AddMuxServer().AddService<IHostingTestService, HostingTestService>();

        // The socket's own error ("Address already in use") does not say which address.
        await Assert.ThrowsAsync<SocketException>(() => TestHost.StartAsync(builder, logs));

        Assert.Contains(logs.Entries, e => e.Category == "Mux.Hosting" && e.EventId.Id == 107 && e.Level == LogLevel.Error && e.Message.Contains(endPoint, StringComparison.Ordinal) && e.Message.Contains("Mux:Server:Listen", StringComparison.Ordinal));
    }

    /// <summary>Starts a client host over the instances of mux://users (so that the options of
    /// several instances are checked too), with <paramref name="configuration"/> added.</summary>
    private static async Task StartServiceClientAsync(Dictionary<string, string?> configuration, Action<MuxClientOptions>? configure = null)
    {
        configuration["Mux:Client:Service"] = "mux://users";
        configuration["Services:users:mux:0"] = "127.0.0.1:1";
        (HostApplicationBuilder builder, LogSink logs) = TestHost.CreateBuilder(configuration);
        builder.Services.AddMuxClient(configure).AddProxy<IHostingTestService>();
        await (await TestHost.StartAsync(builder, logs)).DisposeAsync();
    }

    /// <summary>Not a [MuxService] interface: nothing registers a dispatcher for it.</summary>
    public interface INotAMuxService
    {
    }

    public sealed class NotAMuxService : INotAMuxService
    {
    }
}
