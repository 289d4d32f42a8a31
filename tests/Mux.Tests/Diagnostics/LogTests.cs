using System.Net;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Logging.Testing;
using Mux.Tests.Infrastructure;

namespace Mux.Tests.Diagnostics;

/// <summary>What Mux logs: methods named IService.Method, fixed event ids with event names (the
/// ids of every message in Mux and Mux.Hosting are checked in Mux.Hosting.Tests.LogMessageTests).</summary>
public class LogTests
{
    [Fact]
    public async Task HandlerThatThrows_IsLoggedAsHandlerFailed_NamingTheMethodAsIServiceDotMethod()
    {
        using var logs = new FakeLoggerProvider();
        await using var host = await StartAsync(logs);

        await Assert.ThrowsAsync<MuxRemoteException>(() => host.Client.CreateProxy<ITelemetryTestService>().Fail("logged"));

        FakeLogRecord record = SingleRecord(logs, "HandlerFailed");
        Assert.Equal(6, record.Id.Id);
        Assert.Equal(LogLevel.Warning, record.Level);
        Assert.Equal("Mux.Server", record.Category);
        Assert.StartsWith("A handler for ITelemetryTestService.Fail on connection ", record.Message, StringComparison.Ordinal);
        Assert.Equal("logged", Assert.IsType<InvalidOperationException>(record.Exception).Message);
    }

    [Fact]
    public async Task CallToAServiceTheServerDoesNotServe_IsLoggedAsUnknownMethod_WithTheMethodsName()
    {
        using var logs = new FakeLoggerProvider();
        await using var host = await StartAsync(logs);

        // ITestService is a contract this process knows, but this server serves only ITelemetryTestService.
        var error = await Assert.ThrowsAsync<MuxRemoteException>(() => host.Client.CreateProxy<ITestService>().Add(1, 2).AsTask());

        Assert.Equal(MuxStatusCode.UnknownMethod, error.StatusCode);
        FakeLogRecord record = SingleRecord(logs, "UnknownMethod");
        Assert.Equal(7, record.Id.Id);
        Assert.Contains("called ITestService.Add, which this server does not serve.", record.Message, StringComparison.Ordinal);
    }

    private static async Task<LoggedHost> StartAsync(FakeLoggerProvider logs)
    {
        var factory = new LoggerFactory([logs]);
        var server = new MuxServer(new MuxServerOptions { EndPoint = new IPEndPoint(IPAddress.Loopback, 0), LoggerFactory = factory });
        server.AddService<ITelemetryTestService>(new TelemetryTestService());
        await server.StartAsync();
        MuxClient client = await MuxClient.ConnectAsync(server.LocalEndPoint!);
        return new LoggedHost(server, client, factory);
    }

    /// <summary>The record with the event name. The server logs before it sends the Error frame, so
    /// by the time the caller has seen the failure, the record is there.</summary>
    private static FakeLogRecord SingleRecord(FakeLoggerProvider logs, string eventName) =>
        Assert.Single(logs.Collector.GetSnapshot(), r => r.Id.Name == eventName);

    private sealed class LoggedHost(MuxServer server, MuxClient client, ILoggerFactory factory) : IAsyncDisposable
    {
        public MuxClient Client { get; } = client;

        public async ValueTask DisposeAsync()
        {
            await Client.DisposeAsync();
            await server.StopAsync(new CancellationTokenSource(TelemetryHost.Patience).Token);
            factory.Dispose();
        }
    }
}
