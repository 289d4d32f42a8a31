using System.Diagnostics;
using Mux.Server;
using Mux.Diagnostics;
using Mux.Tests.Infrastructure;

namespace Mux.Tests.Diagnostics;

/// <summary>The connection's stage clock (Diagnostics/StageClock.cs), which the load runner reads
/// for the reader's and the writer's µs per call: every read and every flush is counted once on
/// both sides, and neither serial stage can have spent more time than passed.</summary>
public sealed class StageClockTests
{
    [Theory]
    [InlineData(TransportKind.InMemory)]
    [InlineData(TransportKind.Tcp)]
    public async Task StageClock_CountsEveryReadAndFlush_OnBothSides(TransportKind kind)
    {
        // Started before the connection: its stages count from its first read and flush (the handshake).
        var wall = Stopwatch.StartNew();
        await using TestHost host = await Hosts.StartAsync(kind);
        await Task.WhenAll(Enumerable.Range(0, 200).Select(i => host.Proxy.Add(i, 1).AsTask())).WaitAsync(TestHost.Patience);
        ServerConnection server = Assert.Single(host.Server.Connections);

        // The last read's and flush's hooks run just after the frames they carry are handed on.
        (StageTimes Client, StageTimes Server) stages = await EventuallyAsync(() =>
            Matches(host.Client.Connection.GetStageTimes(), host.Client.GetStatistics())
            && Matches(server.GetStageTimes(), server.GetStatistics()));
        wall.Stop();

        foreach (StageTimes side in new[] { stages.Client, stages.Server })
        {
            Assert.True(side.Reads > 0 && side.WriterTurns > 0, $"{side}");
            Assert.True(side.ReaderMicroseconds > 0 && side.WriterMicroseconds > 0, $"{side}");
            Assert.True(side.ReaderMicroseconds < wall.Elapsed.TotalMicroseconds, $"reader {side.ReaderMicroseconds} µs in {wall.Elapsed.TotalMicroseconds} µs");
            Assert.True(side.WriterMicroseconds < wall.Elapsed.TotalMicroseconds, $"writer {side.WriterMicroseconds} µs in {wall.Elapsed.TotalMicroseconds} µs");
        }

        async Task<(StageTimes, StageTimes)> EventuallyAsync(Func<bool> done)
        {
            var patience = Stopwatch.StartNew();
            while (!done() && patience.Elapsed < TestHost.Patience)
            {
                await Task.Delay(10);
            }

            Assert.True(done(), $"client {host.Client.Connection.GetStageTimes()} / {host.Client.GetStatistics()}; server {server.GetStageTimes()} / {server.GetStatistics()}");
            return (host.Client.Connection.GetStageTimes(), server.GetStageTimes());
        }
    }

    private static bool Matches(StageTimes stages, MuxConnectionStatistics statistics) =>
        stages.Reads == statistics.Reads && stages.WriterTurns == statistics.Flushes;
}
