using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Diagnostics.HealthChecks;
using Microsoft.Extensions.Hosting;

namespace Mux.Hosting.Tests;

public sealed class HealthCheckTests
{
    [Fact]
    public async Task ServerCheck_IsHealthyWhileListening_WithItsEndPointAndConnections()
    {
        await using TestHost server = await TestHost.StartServerAsync(configure: b => b.Services.AddMuxServer().AddHealthCheck());
        await using TestHost client = await TestHost.StartClientAsync(server.ServerEndPoint);
        await TestHost.WaitUntilAsync(() => server.Services.GetRequiredService<MuxServer>().ActiveConnections == 1, "the server has the client's connection");

        HealthReportEntry entry = await CheckAsync(server.Services, "mux-server");

        Assert.Equal(HealthStatus.Healthy, entry.Status);
        Assert.Equal(server.ServerEndPoint.ToString(), entry.Data["endPoint"]);
        Assert.Equal(1, entry.Data["activeConnections"]);
        Assert.Equal($"The Mux server is listening on {server.ServerEndPoint} with 1 connection(s) open.", entry.Description);
    }

    [Fact]
    public async Task ServerCheck_IsUnhealthyOnceTheHostHasStoppedTheServer()
    {
        await using TestHost server = await TestHost.StartServerAsync(configure: b => b.Services.AddMuxServer().AddHealthCheck());
        string endPoint = server.ServerEndPoint.ToString();

        await server.StopAsync();
        HealthReportEntry entry = await CheckAsync(server.Services, "mux-server");

        Assert.Equal(HealthStatus.Unhealthy, entry.Status);
        Assert.StartsWith($"The Mux server on {endPoint} is not accepting connections", entry.Description);
    }

    [Fact]
    public async Task ServerCheck_BeforeTheHostStarts_ReportsTheFailureStatusAndTags()
    {
        (HostApplicationBuilder builder, _) = TestHost.CreateBuilder();
        builder.Services.AddMuxServer(o => o.Listen(System.Net.IPAddress.Loopback, 0))
            .AddHealthCheck("users-rpc", HealthStatus.Degraded, ["ready"]);
        using IHost host = builder.Build();

        HealthReportEntry entry = await CheckAsync(host.Services, "users-rpc");

        Assert.Equal(HealthStatus.Degraded, entry.Status);
        Assert.Equal(["ready"], entry.Tags);
        Assert.Equal("The Mux server has not started: the host starts it.", entry.Description);
    }

    [Fact]
    public async Task ClientCheck_IsHealthyWhileConnected()
    {
        await using TestHost server = await TestHost.StartServerAsync();
        await using TestHost client = await TestHost.StartClientAsync(server.ServerEndPoint, configure: b => b.Services.AddMuxClient().AddHealthCheck());

        HealthReportEntry entry = await CheckAsync(client.Services, "mux-client");

        Assert.Equal(HealthStatus.Healthy, entry.Status);
        Assert.Equal(server.ServerEndPoint.ToString(), entry.Data["endPoint"]);
        Assert.Equal(nameof(MuxCloseReason.None), entry.Data["closeReason"]);
    }

    [Fact]
    public async Task ClientCheck_WhenTheServerGoesAway_IsUnhealthyWithTheCloseReason()
    {
        TestHost server = await TestHost.StartServerAsync();
        string endPoint = server.ServerEndPoint.ToString();
        await using TestHost client = await TestHost.StartClientAsync(server.ServerEndPoint, configure: b => b.Services.AddMuxClient().AddHealthCheck());
        MuxClient muxClient = client.Services.GetRequiredService<MuxClient>();

        await server.DisposeAsync();
        await TestHost.WaitUntilAsync(() => muxClient.State == MuxClientState.Reconnecting, "the client notices and reconnects");
        HealthReportEntry entry = await CheckAsync(client.Services, "mux-client");

        MuxCloseReason reason = muxClient.CloseReason;
        Assert.NotEqual(MuxCloseReason.None, reason);
        Assert.Equal(HealthStatus.Unhealthy, entry.Status);
        Assert.Equal(reason.ToString(), entry.Data["closeReason"]);
        Assert.Equal(nameof(MuxClientState.Reconnecting), entry.Data["state"]);
        Assert.Equal($"The Mux client is not connected to {endPoint} (Reconnecting); its last connection closed: {reason}.", entry.Description);
    }

    [Fact]
    public async Task ClientCheck_OfAClientOverSeveralInstances_NamesTheService()
    {
        await using TestHost server = await TestHost.StartServerAsync();
        await using TestHost client = await TestHost.StartClientAsync(server.ServerEndPoint, new()
        {
            ["Mux:Client:Connect"] = null,
            ["Mux:Client:Service"] = "mux://users",
            ["Services:users:mux:0"] = server.ServerEndPoint.ToString(),
        }, b => b.Services.AddMuxClient().AddHealthCheck());

        HealthReportEntry entry = await CheckAsync(client.Services, "mux-client");

        // Such a client has no one endpoint: the old check said "connected to ?".
        Assert.Equal(HealthStatus.Healthy, entry.Status);
        Assert.Equal("mux://users", entry.Data["endPoint"]);
        Assert.Equal("The Mux client is connected to mux://users with 0 call(s) pending.", entry.Description);
    }

    [Fact]
    public async Task ClientCheck_BeforeTheHostConnects_IsUnhealthy()
    {
        (HostApplicationBuilder builder, _) = TestHost.CreateBuilder();
        builder.Services.AddMuxClient(o => o.EndPoint = new System.Net.IPEndPoint(System.Net.IPAddress.Loopback, 1)).AddHealthCheck();
        using IHost host = builder.Build();

        HealthReportEntry entry = await CheckAsync(host.Services, "mux-client");

        Assert.Equal(HealthStatus.Unhealthy, entry.Status);
        Assert.Equal("The Mux client is not connected: the host connects it when it starts.", entry.Description);
    }

    private static async Task<HealthReportEntry> CheckAsync(IServiceProvider services, string name)
    {
        HealthReport report = await services.GetRequiredService<HealthCheckService>().CheckHealthAsync().WaitAsync(TestHost.Patience);
        return Assert.Single(report.Entries, e => e.Key == name).Value;
    }
}
