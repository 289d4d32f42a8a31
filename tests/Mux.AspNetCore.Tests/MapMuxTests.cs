using System.Net;

namespace Mux.AspNetCore.Tests;

/// <summary>MapMux on Kestrel: calls and streams over a real WebSocket, the answers to requests that
/// are not Mux's, and a server with no TCP endpoint of its own or one beside it.</summary>
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
}
