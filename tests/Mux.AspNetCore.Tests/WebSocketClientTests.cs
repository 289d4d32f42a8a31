using System.Net;
using System.Net.Sockets;
using System.Security.Cryptography.X509Certificates;
using Mux.Tests.Security;

namespace Mux.AspNetCore.Tests;

/// <summary>The .NET client over WebSocket behaves as over TCP: it reconnects when its server comes
/// back, drains on GoAway, honours TLS options over wss://, and says why a connect failed.</summary>
public class WebSocketClientTests
{
    [Fact]
    public async Task TheClient_ReconnectsToTheSameUri_AfterTheServerRestarts()
    {
        WebTestHost first = await WebTestHost.StartAsync();
        int port = first.Port;
        var states = new StateLog();
        await using MuxClient client = await MuxClient.ConnectAsync(first.Uri, new MuxClientOptions { ReconnectMaxDelay = TimeSpan.FromMilliseconds(200) });
        client.StateChanged += states.Record;
        IWebTestService service = client.CreateProxy<IWebTestService>();
        Assert.Equal(3, await service.Add(1, 2));

        await first.DisposeAsync();
        await states.WaitForAsync(MuxClientState.Reconnecting);
        await using WebTestHost second = await WebTestHost.StartAsync(new WebTestHostOptions { Port = port });

        Assert.Equal(11, await service.Add(5, 6).AsTask().WaitAsync(WebTestHost.Patience)); // Waits for the new connection.
        Assert.Equal(MuxClientState.Connected, client.State);
        Assert.Equal(1, second.Server.ConnectionsAccepted);
    }

    [Fact]
    public async Task TheApplicationsStop_SendsGoAway_AndDrainsTheCallInFlight()
    {
        WebTestHost host = await WebTestHost.StartAsync();
        var states = new StateLog();
        await using MuxClient client = await MuxClient.ConnectAsync(host.Uri);
        client.StateChanged += states.Record;
        IWebTestService service = client.CreateProxy<IWebTestService>();
        Task<int> held = service.WaitForGate(42);
        await host.Service.Waiting.Task.WaitAsync(WebTestHost.Patience);

        Task stopping = host.StopAsync();
        MuxConnectionException refused = await FirstRefusalAsync(client.CreateProxy<IWebTestService>(new MuxCallOptions { WaitForConnection = false }));
        Assert.True(refused.IsSafeToRetry, refused.Message); // The GoAway has arrived: new calls are not sent.
        await states.WaitForAsync(MuxClientState.Reconnecting);
        Assert.False(held.IsCompleted); // GoAway does not end a call the server promised to serve,
        Assert.False(stopping.IsCompleted); // and the stop waits for it.
        host.Service.Gate.SetResult();

        Assert.Equal(42, await held.WaitAsync(WebTestHost.Patience));
        await stopping.WaitAsync(WebTestHost.Patience);
        Assert.Equal(MuxCloseReason.GoAway, client.CloseReason);
        await host.App.DisposeAsync();
    }

    /// <summary>The balancer takes WebSocket instances, named by MuxWebSocketEndPoint, as it takes TCP ones.</summary>
    [Fact]
    public async Task ABalancedClient_SpreadsItsCallsOverWebSocketInstances()
    {
        await using WebTestHost first = await WebTestHost.StartAsync();
        await using WebTestHost second = await WebTestHost.StartAsync();
        var options = new MuxClientOptions();
        options.EndPoints.Add(new MuxWebSocketEndPoint(first.Uri));
        options.EndPoints.Add(new MuxWebSocketEndPoint(second.Uri));
        await using MuxClient client = await MuxClient.ConnectAsync(options);
        IWebTestService service = client.CreateProxy<IWebTestService>();

        using var patience = new CancellationTokenSource(WebTestHost.Patience);
        while (client.GetEndPointStatistics().Count(instance => instance.State == MuxClientState.Connected) < 2)
        {
            await Task.Delay(10, patience.Token);
        }

        for (int i = 0; i < 200; i++)
        {
            Assert.Equal(i + 1, await service.Add(i, 1));
        }

        IReadOnlyList<MuxEndPointStatistics> instances = client.GetEndPointStatistics();
        Assert.Equal(new[] { first.Uri.ToString(), second.Uri.ToString() }.Order(), instances.Select(instance => instance.EndPoint.ToString()).Order());
        Assert.All(instances, instance => Assert.True(instance.CallsSent > 0, $"{instance.EndPoint} was sent no call"));
        Assert.Equal(200, instances.Sum(instance => instance.CallsSent));
    }

    [Fact]
    public async Task Wss_HonoursTheClientCertificate_AndTheServersValidation()
    {
        await using WebTestHost host = await WebTestHost.StartAsync(new WebTestHostOptions { Certificate = TestCertificates.Server, RequireClientCertificate = true });
        var tls = TestCertificates.ClientTlsTrusting();
        tls.ClientCertificates = new X509CertificateCollection { TestCertificates.Client };

        await using MuxClient client = await MuxClient.ConnectAsync(host.Uri, new MuxClientOptions { Tls = tls });

        string connection = await client.CreateProxy<IWebTestService>().DescribeConnection();
        Assert.StartsWith("127.0.0.1:", connection);
        Assert.EndsWith(" CN=mux-test-client", connection);
    }

    [Fact]
    public async Task Wss_ToAServerThisMachineDoesNotTrust_FailsNamingTls()
    {
        await using WebTestHost host = await WebTestHost.StartAsync(new WebTestHostOptions { Certificate = TestCertificates.Server });

        MuxConnectionException refused = await Assert.ThrowsAsync<MuxConnectionException>(() => MuxClient.ConnectAsync(host.Uri, new MuxClientOptions { AutoReconnect = false }));

        Assert.Contains($"The TLS handshake with the Mux server at {host.Uri} failed", refused.Message);
        Assert.Contains("MuxClientOptions.Tls.RemoteCertificateValidationCallback", refused.Message);
    }

    [Fact]
    public async Task APathWithNothingMapped_FailsWith404()
    {
        await using WebTestHost host = await WebTestHost.StartAsync();

        MuxConnectionException refused = await Assert.ThrowsAsync<MuxConnectionException>(() => MuxClient.ConnectAsync(new Uri(host.Uri, "/elsewhere"), new MuxClientOptions { AutoReconnect = false }));

        Assert.Contains("HTTP 404 (NotFound)", refused.Message);
    }

    [Fact]
    public async Task APortNothingListensOn_FailsSayingItCouldNotConnect()
    {
        int port;
        using (var probe = new Socket(AddressFamily.InterNetwork, SocketType.Stream, ProtocolType.Tcp))
        {
            probe.Bind(new IPEndPoint(IPAddress.Loopback, 0));
            port = ((IPEndPoint)probe.LocalEndPoint!).Port; // Free once the probe is closed.
        }

        var uri = new Uri($"ws://127.0.0.1:{port}/mux");
        MuxConnectionException refused = await Assert.ThrowsAsync<MuxConnectionException>(() => MuxClient.ConnectAsync(uri));

        Assert.StartsWith($"Could not connect to the Mux server at {uri}: ", refused.Message);
    }

    [Fact]
    public async Task TheUri_MustBeWebSocket_AndTlsNeedsWss()
    {
        ArgumentException notWebSocket = await Assert.ThrowsAsync<ArgumentException>(() => MuxClient.ConnectAsync(new Uri("http://127.0.0.1:5000/mux")));
        InvalidOperationException plaintext = await Assert.ThrowsAsync<InvalidOperationException>(() => MuxClient.ConnectAsync(new Uri("ws://127.0.0.1:5000/mux"), new MuxClientOptions { Tls = new() }));

        Assert.Contains("is not a WebSocket URI", notWebSocket.Message);
        Assert.Contains("Use wss://", plaintext.Message);
    }

    /// <summary>Calls <paramref name="service"/> (which does not wait for a connection) until a call
    /// is refused, as every call is once the server's GoAway has arrived; fails the test after
    /// <see cref="WebTestHost.Patience"/>.</summary>
    private static async Task<MuxConnectionException> FirstRefusalAsync(IWebTestService service)
    {
        using var patience = new CancellationTokenSource(WebTestHost.Patience);
        while (true)
        {
            try
            {
                await service.Add(1, 1);
            }
            catch (MuxConnectionException refused)
            {
                return refused;
            }

            await Task.Delay(10, patience.Token);
        }
    }

    /// <summary>The client's state changes, for a test to wait for one.</summary>
    private sealed class StateLog
    {
        private readonly List<MuxClientState> _states = [];
        private readonly SemaphoreSlim _changed = new(0);

        public void Record(object? sender, MuxClientStateChangedEventArgs change)
        {
            lock (_states)
            {
                _states.Add(change.State);
            }

            _changed.Release();
        }

        public async Task WaitForAsync(MuxClientState state)
        {
            using var patience = new CancellationTokenSource(WebTestHost.Patience);
            while (true)
            {
                lock (_states)
                {
                    if (_states.Contains(state))
                    {
                        return;
                    }
                }

                await _changed.WaitAsync(patience.Token);
            }
        }
    }
}
