using System.Net.Sockets;
using Mux.Tests.Infrastructure;
using static Mux.Tests.Infrastructure.RawServerFrames;

namespace Mux.Tests.Client;

/// <summary>
/// A server that completes every handshake and drops the connection at once (or sends GoAway at
/// once) must not make the client reconnect back to back: the first such loss is replaced at once,
/// as any lost connection is, but a connection lost again so soon counts as a failed attempt and
/// waits out the reconnect backoff. The server is hand-written; the clock is fake and stands still
/// unless the test moves it, so every reconnect the client makes without waiting shows up as one
/// more accepted connection.
/// </summary>
public sealed class FlappingServerTests
{
    private static readonly TimeSpan InitialDelay = TimeSpan.FromSeconds(1);
    private static readonly TimeSpan MaxDelay = TimeSpan.FromSeconds(4);

    [Theory]
    [InlineData("closes")]
    [InlineData("sends GoAway")]
    public async Task AServerThatDropsEveryConnectionAtOnce_IsReconnectedToOnTheBackoff_NotInALoop(string drop)
    {
        using TcpListener listener = RawMuxPeer.Listen();
        var clock = new DelayWatchingClock();
        using var stop = new CancellationTokenSource();
        int accepted = 0;
        Task server = Task.Run(async () =>
        {
            while (!stop.IsCancellationRequested)
            {
                await using RawMuxPeer peer = await RawMuxPeer.AcceptAsync(listener);
                Interlocked.Increment(ref accepted);
                await peer.AnswerHelloAsync();
                if (drop == "sends GoAway")
                {
                    // No call was sent: the client closes its side at once.
                    await peer.SendAsync(GoAway(0));
                    await peer.AssertClosedByOtherSideAsync();
                }
            }
        });

        MuxClient client = MuxClient.Create(new MuxClientOptions
        {
            EndPoint = listener.LocalEndpoint,
            ReconnectInitialDelay = InitialDelay,
            ReconnectMaxDelay = MaxDelay,
            KeepAliveInterval = Timeout.InfiniteTimeSpan,
            TimeProvider = clock,
        });
        try
        {
            // The first connection and its replacement come at once; the replacement, lost as soon,
            // waits a backoff step (up to 20% shorter), then each next one twice as long, up to the maximum.
            TimeSpan[] waits = [InitialDelay, 2 * InitialDelay, MaxDelay, MaxDelay];
            for (int i = 0; i < waits.Length; i++)
            {
                int connections = i + 2;
                await Hosts.WaitUntilAsync(
                    () => Volatile.Read(ref accepted) > connections || clock.DueTimes.Length > i,
                    $"the client waits a backoff step after {connections} connections");
                Assert.Equal(connections, Volatile.Read(ref accepted));
                Assert.Equal(i + 1, clock.DueTimes.Length);
                Assert.InRange(clock.DueTimes[i], waits[i] * 0.8, waits[i]);
                clock.Advance(waits[i]);
            }
        }
        finally
        {
            stop.Cancel();
            await client.DisposeAsync().AsTask().WaitAsync(TestHost.Patience);
            listener.Stop();

            // The stopped listener (or the disposed client) ends the server's loop, one way or another.
            await Task.WhenAny(server).WaitAsync(TestHost.Patience);
        }
    }
}
