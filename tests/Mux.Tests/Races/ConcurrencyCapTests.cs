using Mux.Tests.Infrastructure;

namespace Mux.Tests.Races;

/// <summary>
/// MaxConcurrentCallsPerConnection holds exactly: the service counts its handlers running at once,
/// and the test lets them finish one at a time, so nothing depends on how long anything takes.
/// </summary>
public sealed class ConcurrencyCapTests
{
    private const int Cap = 4;
    private const int Calls = 40;

    [Theory]
    [InlineData(TransportKind.InMemory)]
    [InlineData(TransportKind.Tcp)]
    public async Task NoMoreThanTheCapOfHandlersEverRunAtOnce_AndEveryCallBeyondItRunsOnceOneEnds(TransportKind kind)
    {
        await using TestHost host = await Hosts.StartAsync(kind, new MuxServerOptions { MaxConcurrentCallsPerConnection = Cap });
        Task<int>[] calls = Enumerable.Range(0, Calls).Select(host.RaceProxy.Occupy).ToArray();
        AssertNoMoreThanTheCapWereSent(host);

        for (int released = 0; released < Calls; released++)
        {
            // With the cap holding, exactly this many handlers can have started: the cap's worth,
            // plus one for every handler let go so far. Wait for them; a further one is a breach.
            int canHaveStarted = Math.Min(released + Cap, Calls);
            while (host.Race.OccupyStarted < canHaveStarted)
            {
                await host.Race.WaitForOccupantAsync();
            }

            Assert.True(host.Race.OccupyStarted <= canHaveStarted, $"{host.Race.OccupyStarted} handlers started after only {released} had been let go (cap {Cap}).");
            Assert.True(host.Race.MaxOccupying <= Cap, $"{host.Race.MaxOccupying} handlers ran at once (cap {Cap}).");
            AssertNoMoreThanTheCapWereSent(host);
            host.Race.ReleaseOneOccupant();
        }

        // No call was dropped, each got its own result, and the cap was reached (not merely not exceeded).
        Assert.Equal(Enumerable.Range(0, Calls), await Task.WhenAll(calls).WaitAsync(TestHost.Patience));
        Assert.Equal(Cap, host.Race.MaxOccupying);
        Assert.Equal(0, host.Client.PendingCalls);
    }

    /// <summary>The handler counts above lag behind the server: a call it admitted beyond the cap
    /// may still wait for a pool thread when they are read (a run with the cap ignored on both
    /// sides passed about one time in three that way). The calls the client has sent and not yet
    /// seen answered have no such lag: a call leaves the table before its slot is freed, so
    /// with the cap honoured they never exceed it, at any moment.</summary>
    private static void AssertNoMoreThanTheCapWereSent(TestHost host) =>
        Assert.True(host.Client.PendingCalls <= Cap, $"{host.Client.PendingCalls} calls were sent and unanswered at once (cap {Cap}): the client must wait for a slot.");
}
