using Mux.Tests.Infrastructure;

namespace Mux.Tests.Server;

/// <summary>A refusal in the handshake travels before the client has said how large a frame it
/// takes (4096 bytes until then): a long reason must still reach it, cut, with its status.</summary>
public class LongRefusalTests
{
    [Fact]
    public async Task AnAuthenticateRefusalWithAMessageLongerThanAHandshakeFrame_ReachesTheClientCut_WithItsStatus()
    {
        string reason = new('x', 5000);
        await using var server = new MuxServer(new MuxServerOptions
        {
            // Far beyond the test's patience: only the refusal can end the connect in time.
            HandshakeTimeout = TimeSpan.FromMinutes(10),
            Authenticate = (_, _) => throw new MuxRemoteException(MuxStatusCode.PermissionDenied, reason),
        });
        server.AddService<ITestService>(new TestService());

        MuxConnectionException refused = await Assert.ThrowsAsync<MuxConnectionException>(
            () => server.ConnectInMemoryAsync(new MuxClientOptions { ConnectTimeout = Timeout.InfiniteTimeSpan }).WaitAsync(TestHost.Patience));

        var remote = Assert.IsType<MuxRemoteException>(refused.InnerException);
        Assert.Equal(MuxStatusCode.PermissionDenied, remote.StatusCode);
        Assert.Equal(reason[..1024], remote.Message);
        await Hosts.WaitUntilAsync(() => server.ActiveConnections == 0, "the server to drop the refused connection");
    }
}
