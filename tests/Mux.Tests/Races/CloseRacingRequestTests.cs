using Mux.Server;
using Mux.Tests.Infrastructure;

namespace Mux.Tests.Races;

/// <summary>
/// A connection that closes while its reader loop is starting requests cancels every handler it
/// started. The close (a stop out of patience, an idle or keep-alive timeout) runs on another
/// thread and cancels the handlers it finds in the table of running calls; a request the reader
/// had just checked the connection for, and added to the table only after the close had looked,
/// ran with a token nothing would ever cancel: a handler waiting on it (for its caller, or for a
/// stream's credit) ran for good, after its connection and its caller were gone.
/// </summary>
public sealed class CloseRacingRequestTests
{
    private const int Calls = 16;
    private const int Rounds = 400;

    [Theory]
    [InlineData(TransportKind.InMemory)]
    [InlineData(TransportKind.Tcp)]
    public async Task AConnectionClosedAsItsRequestsArrive_CancelsEveryHandlerItStarted(TransportKind kind)
    {
        await using TestHost host = await Hosts.StartAsync(kind);
        var random = new Random(29);
        for (int round = 0; round < Rounds; round++)
        {
            ServerConnection[] before = [.. host.Server.Connections];
            await using MuxClient client = await host.ConnectAnotherClientAsync(new MuxClientOptions { AutoReconnect = false });
            ServerConnection? served = null;
            await Hosts.WaitUntilAsync(() => (served = host.Server.Connections.FirstOrDefault(c => !before.Contains(c))) is not null, "the server to list the new connection");
            IRaceService proxy = client.CreateProxy<IRaceService>();

            // Each handler waits for its token: only a cancel ends it.
            var calls = new Task<int>[Calls];
            for (int i = 0; i < Calls; i++)
            {
                calls[i] = proxy.Respond((round * Calls) + i, -1);
            }

            // Closed from this thread after a different short spin each round: before the requests
            // arrive, while the reader starts them, or after.
            Thread.SpinWait(random.Next(0, 40_000));
            served!.CloseGracefully(MuxCloseReason.LocalShutdown, TimeSpan.Zero);

            foreach (Task<int> call in calls)
            {
                await Assert.ThrowsAsync<MuxConnectionException>(() => call.WaitAsync(TestHost.Patience));
            }

            await Hosts.WaitUntilAsync(() => host.Race.RespondRunning == 0, $"every handler of round {round} to see its token cancelled ({host.Race.RespondRunning} still running)");
            await Hosts.WaitUntilAsync(() => served.Incoming.Count == 0, $"the closed connection of round {round} to hold no call");
        }

        Assert.Equal(0, host.Race.RespondRunning);
        Assert.Equal(42, await host.Proxy.Add(40, 2).AsTask().WaitAsync(TestHost.Patience));
    }
}
