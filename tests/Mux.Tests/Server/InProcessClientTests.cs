using System.Security.Claims;
using Mux.Tests.Infrastructure;

namespace Mux.Tests.Server;

/// <summary>
/// MuxServer.ConnectInProcessAsync: a client in the same process over a pair of pipes, with no
/// listener and no port, that behaves as a TCP client does: the handshake with its token and
/// Authenticate, the server's limits, GoAway and the drain on stop, the close when either side goes.
/// </summary>
public sealed class InProcessClientTests
{
    [Fact]
    public async Task AServerWithoutEndPoint_ServesAnInProcessClient_WithNoListener()
    {
        await using var server = new MuxServer(new MuxServerOptions());
        server.AddService<ITestService>(new TestService());

        await using MuxClient client = await server.ConnectInProcessAsync().WaitAsync(TestHost.Patience);

        Assert.Equal(5, await client.CreateProxy<ITestService>().Add(2, 3));
        Assert.Null(server.LocalEndPoint);
        Assert.False(server.IsListening);
        Assert.Null(client.RemoteEndPoint);
        Assert.Equal(1, server.ConnectionsAccepted);
        Assert.Equal(1, server.ActiveConnections);
    }

    [Fact]
    public async Task AListeningServer_ServesInProcessClientsBesideItsTcpOnes()
    {
        await using TestHost host = await TestHost.StartTcpAsync();
        await using MuxClient inProcess = await host.Server.ConnectInProcessAsync().WaitAsync(TestHost.Patience);

        Assert.Equal(30, await inProcess.CreateProxy<ITestService>().Add(10, 20));
        Assert.Equal(3, await host.Proxy.Add(1, 2));
        Assert.Equal(2, host.Server.ActiveConnections);
    }

    [Fact]
    public async Task TheHandshake_ChecksTheToken_AndRunsAuthenticate()
    {
        MuxConnectionInfo? seen = null;
        await using var server = new MuxServer(new MuxServerOptions
        {
            AuthToken = "secret",
            Authenticate = (connection, _) =>
            {
                seen = connection;
                return ValueTask.FromResult<ClaimsPrincipal?>(new ClaimsPrincipal(new ClaimsIdentity([new Claim(ClaimTypes.Name, "alice")], "test")));
            },
        });
        server.AddService<ITestService>(new TestService());

        MuxConnectionException refused = await Assert.ThrowsAsync<MuxConnectionException>(() => server.ConnectInProcessAsync(new MuxClientOptions { AuthToken = "wrong" }).WaitAsync(TestHost.Patience));
        await using MuxClient client = await server.ConnectInProcessAsync(new MuxClientOptions { AuthToken = "secret" }).WaitAsync(TestHost.Patience);

        Assert.Contains("did not carry the auth token this server requires", refused.Message);
        Assert.Equal(4, await client.CreateProxy<ITestService>().Add(2, 2));
        Assert.NotNull(seen);
        Assert.Equal("secret", seen.AuthToken);
        Assert.Null(seen.RemoteEndPoint);
        Assert.Null(seen.ClientCertificate);
    }

    [Fact]
    public async Task TheServersLimits_ReachTheClientInTheHandshake()
    {
        await using var server = new MuxServer(new MuxServerOptions { MaxMessageSize = 64 * 1024 });
        server.AddService<ITestService>(new TestService());
        await using MuxClient client = await server.ConnectInProcessAsync().WaitAsync(TestHost.Patience);
        ITestService service = client.CreateProxy<ITestService>();

        InvalidOperationException tooLarge = await Assert.ThrowsAnyAsync<InvalidOperationException>(() => service.Echo(new string('x', 100 * 1024)));

        Assert.Contains("over the peer's MaxMessageSize of 65536 bytes", tooLarge.Message);
        Assert.Equal("still open", await service.Echo("still open"));
    }

    [Fact]
    public async Task ALargeResponse_CrossesThePipesInFragments()
    {
        await using var server = new MuxServer(new MuxServerOptions());
        server.AddService<ITestService>(new TestService());
        await using MuxClient client = await server.ConnectInProcessAsync().WaitAsync(TestHost.Patience);

        byte[] bytes = await client.CreateProxy<ITestService>().Bytes(8 * 1024 * 1024).WaitAsync(TestHost.Patience);

        Assert.Equal(8 * 1024 * 1024, bytes.Length);
    }

    [Fact]
    public async Task StoppingTheServer_SendsGoAway_AndDrainsTheCallInFlight()
    {
        var service = new TestService();
        var server = new MuxServer(new MuxServerOptions());
        server.AddService<ITestService>(service);
        await using MuxClient client = await server.ConnectInProcessAsync().WaitAsync(TestHost.Patience);
        Task<int> hanging = client.CreateProxy<ITestService>().Hang(7);
        using (var patience = new CancellationTokenSource(TestHost.Patience))
        {
            while (service.HangingCalls == 0)
            {
                await Task.Delay(1, patience.Token); // The handler has started: the call is the server's to finish.
            }
        }

        Task stopping = server.StopAsync();
        Assert.False(stopping.IsCompleted);
        service.ReleaseHangingCalls();

        Assert.Equal(7, await hanging.WaitAsync(TestHost.Patience));
        await stopping.WaitAsync(TestHost.Patience);
        await client.Completion.WaitAsync(TestHost.Patience);
        Assert.Equal(MuxCloseReason.GoAway, client.CloseReason);
        Assert.Equal(MuxClientState.Closed, client.State);
        Assert.Equal(0, server.ActiveConnections);
    }

    [Fact]
    public async Task DisposingTheClient_ClosesTheServersEnd()
    {
        await using var server = new MuxServer(new MuxServerOptions());
        server.AddService<ITestService>(new TestService());
        MuxClient client = await server.ConnectInProcessAsync().WaitAsync(TestHost.Patience);
        Assert.Equal(2, await client.CreateProxy<ITestService>().Add(1, 1));

        await client.DisposeAsync();

        await Task.WhenAll(server.Connections.Select(connection => connection.Completion)).WaitAsync(TestHost.Patience);
        Assert.Equal(MuxCloseReason.LocalShutdown, client.CloseReason);
        MuxConnectionException closed = await Assert.ThrowsAsync<MuxConnectionException>(() => client.CreateProxy<ITestService>().Add(1, 1).AsTask());
        Assert.False(closed.IsSafeToRetry);
    }
}
