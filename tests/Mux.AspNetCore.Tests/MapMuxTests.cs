using System.Diagnostics.Metrics;
using System.Net;
using System.Net.WebSockets;
using Microsoft.AspNetCore.Builder;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Diagnostics.Metrics.Testing;

namespace Mux.AspNetCore.Tests;

/// <summary>MapMux on Kestrel: calls and streams over a real WebSocket, what AddMuxServer registered
/// applied to them, the answers to requests that are not Mux's, and a server with no TCP endpoint of
/// its own or one beside it.</summary>
public class MapMuxTests
{
    [Fact]
    public async Task ACallOverWebSocket_ReturnsTheHandlersResult()
    {
        await using WebTestHost host = await WebTestHost.StartAsync();
        await using MuxClient client = await MuxClient.ConnectAsync(host.Uri);

        Assert.Equal(5, await client.CreateProxy<IWebTestService>().Add(2, 3));
        Assert.Equal(MuxClientState.Connected, client.State);
        Assert.Equal(1, host.Server.ActiveConnections);
    }

    [Fact]
    public async Task StreamsFlowBothWays_OverWebSocket()
    {
        await using WebTestHost host = await WebTestHost.StartAsync();
        await using MuxClient client = await MuxClient.ConnectAsync(host.Uri);
        IWebTestService service = client.CreateProxy<IWebTestService>();

        var received = new List<int>();
        await foreach (int value in service.Count(300))
        {
            received.Add(value);
        }

        Assert.Equal(Enumerable.Range(1, 300), received);
        Assert.Equal(45_150, await service.Sum(Values(300)));
    }

    [Fact]
    public async Task ALargeMessage_CrossesInFragmentsSpanningManyWebSocketMessages()
    {
        await using WebTestHost host = await WebTestHost.StartAsync();
        await using MuxClient client = await MuxClient.ConnectAsync(host.Uri);

        // 3 MiB: over the default 64 KiB fragments and the pipes' 64 KiB segments, so frames span
        // WebSocket messages and messages hold parts of several frames.
        Assert.Equal(3 * 1024 * 1024, await client.CreateProxy<IWebTestService>().Length(new byte[3 * 1024 * 1024]));
    }

    [Fact]
    public async Task ARequestThatIsNotAWebSocketUpgrade_IsAnswered400WithWhatToDo()
    {
        await using WebTestHost host = await WebTestHost.StartAsync();
        using var http = new HttpClient();

        using HttpResponseMessage response = await http.GetAsync(host.HttpUri);

        Assert.Equal(HttpStatusCode.BadRequest, response.StatusCode);
        string body = await response.Content.ReadAsStringAsync();
        Assert.Contains("serves Mux over WebSocket, and the request is not a WebSocket upgrade", body);
        Assert.Equal(0, host.Server.ConnectionsAccepted);
    }

    [Fact]
    public async Task AWebSocketOfferingOnlyOtherSubprotocols_IsAnswered400()
    {
        await using WebTestHost host = await WebTestHost.StartAsync();
        using var webSocket = new ClientWebSocket();
        webSocket.Options.AddSubProtocol("chat");
        webSocket.Options.CollectHttpResponseDetails = true;

        await Assert.ThrowsAsync<WebSocketException>(() => webSocket.ConnectAsync(host.Uri, CancellationToken.None));

        Assert.Equal(HttpStatusCode.BadRequest, webSocket.HttpStatusCode);
        Assert.Equal(0, host.Server.ConnectionsAccepted);
    }

    [Fact]
    public async Task AWebSocketOfferingMux_IsAnsweredWithMux_AndOneOfferingNone_WithNone()
    {
        await using WebTestHost host = await WebTestHost.StartAsync();
        using var offering = new ClientWebSocket();
        offering.Options.AddSubProtocol("chat");
        offering.Options.AddSubProtocol("mux");
        using var silent = new ClientWebSocket();

        await offering.ConnectAsync(host.Uri, CancellationToken.None);
        await silent.ConnectAsync(host.Uri, CancellationToken.None);

        Assert.Equal("mux", offering.SubProtocol);
        Assert.Null(silent.SubProtocol);
    }

    [Fact]
    public async Task AServerWithoutEndPoint_ServesOnlyItsMappedEndpoint()
    {
        await using WebTestHost host = await WebTestHost.StartAsync();
        await using MuxClient client = await MuxClient.ConnectAsync(host.Uri);
        Assert.Equal(7, await client.CreateProxy<IWebTestService>().Add(3, 4));

        Assert.Null(host.Server.LocalEndPoint);
        Assert.True(host.Server.IsListening);
        Assert.Equal(1, host.Server.ConnectionsAccepted);
    }

    [Fact]
    public async Task TcpAndWebSocket_ServeSideBySide_InOneHost()
    {
        await using WebTestHost host = await WebTestHost.StartAsync(new WebTestHostOptions { ConfigureMux = o => o.Listen(IPAddress.Loopback, 0) });
        await using MuxClient overTcp = await MuxClient.ConnectAsync(host.Server.LocalEndPoint!);
        await using MuxClient overWebSocket = await MuxClient.ConnectAsync(host.Uri);

        Assert.Equal(3, await overTcp.CreateProxy<IWebTestService>().Add(1, 2));
        Assert.Equal(30, await overWebSocket.CreateProxy<IWebTestService>().Add(10, 20));
        Assert.Equal(2, host.Server.ActiveConnections);
        Assert.Equal(2, host.Server.ConnectionsAccepted);
    }

    [Fact]
    public async Task InterceptorsAndLimitsOfAddMuxServer_ApplyToWebSocketCalls()
    {
        await using WebTestHost host = await WebTestHost.StartAsync(new WebTestHostOptions
        {
            ConfigureMux = o => o.MaxMessageSize = 64 * 1024,
            ConfigureServices = (builder, mux) =>
            {
                builder.Services.AddSingleton<CallJournal>();
                mux.AddInterceptor<JournalingInterceptor>();
            },
        });
        await using MuxClient client = await MuxClient.ConnectAsync(host.Uri);
        IWebTestService service = client.CreateProxy<IWebTestService>();

        Assert.Equal(9, await service.Add(4, 5));

        // The server's MaxMessageSize reached the client in the handshake over the WebSocket.
        InvalidOperationException tooLarge = await Assert.ThrowsAnyAsync<InvalidOperationException>(() => service.Length(new byte[100 * 1024]));
        Assert.Contains("MaxMessageSize", tooLarge.Message);
        Assert.Equal(["IWebTestService.Add"], host.App.Services.GetRequiredService<CallJournal>().Methods);
    }

    [Fact]
    public async Task AWebSocketCall_IsMeasuredAsAnyServerCall()
    {
        using var durations = new MetricCollector<double>(null, "Mux", "rpc.server.call.duration");
        await using WebTestHost host = await WebTestHost.StartAsync();
        await using MuxClient client = await MuxClient.ConnectAsync(host.Uri);

        await client.CreateProxy<IWebTestService>().Ping();

        await durations.WaitForMeasurementsAsync(1, WebTestHost.Patience);
        Assert.Contains(durations.GetMeasurementSnapshot(), measurement => Equals(measurement.Tags["rpc.method"], "Ping") && Equals(measurement.Tags["rpc.service"], "Mux.AspNetCore.Tests.IWebTestService"));
    }

    [Fact]
    public void MapMux_WithoutAddMuxServer_ThrowsNamingIt()
    {
        WebApplication app = WebApplication.CreateSlimBuilder().Build();

        InvalidOperationException error = Assert.Throws<InvalidOperationException>(() => app.MapMux("/mux"));

        Assert.Contains("builder.Services.AddMuxServer()", error.Message);
    }

    private static async IAsyncEnumerable<int> Values(int count)
    {
        for (int i = 1; i <= count; i++)
        {
            await Task.Yield();
            yield return i;
        }
    }

    /// <summary>The methods <see cref="JournalingInterceptor"/> saw, in order.</summary>
    public sealed class CallJournal
    {
        private readonly List<string> _methods = [];

        public IReadOnlyList<string> Methods
        {
            get
            {
                lock (_methods)
                {
                    return [.. _methods];
                }
            }
        }

        public void Add(string method)
        {
            lock (_methods)
            {
                _methods.Add(method);
            }
        }
    }

    public sealed class JournalingInterceptor(CallJournal journal) : IMuxServerInterceptor
    {
        public ValueTask InvokeAsync(MuxCallContext call, Func<ValueTask> next)
        {
            journal.Add(call.MethodName);
            return next();
        }
    }
}
