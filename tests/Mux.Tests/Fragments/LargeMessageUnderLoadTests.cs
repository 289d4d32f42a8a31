using Mux.Tests.Infrastructure;

namespace Mux.Tests.Fragments;

/// <summary>A payload of 16 or 100 MiB echoed over loopback TCP while a hundred small callers keep
/// calling on the same connection. They run in the serial collection: alone, they neither starve
/// timing-sensitive neighbours of CPU and memory nor wait on them past their patience.</summary>
[Collection(SerialCollection.Name)]
public sealed class LargeMessageUnderLoadTests
{
    private const int MiB = 1024 * 1024;

    [Theory]
    [InlineData(16)]
    [InlineData(100)]
    public async Task ALargePayload_RoundTripsIntact_WhileAHundredSmallCallersEachCompleteEveryCallExactlyOnce(int mebibytes)
    {
        var serverOptions = new MuxServerOptions { MaxMessageSize = 128 * MiB };
        var clientOptions = new MuxClientOptions { MaxMessageSize = 128 * MiB, CallTimeout = TimeSpan.FromMinutes(2) };
        await using BlobHost host = await BlobHost.StartAsync(serverOptions, clientOptions);
        byte[] data = BlobService.Pattern(mebibytes * MiB);

        int started = 0;
        int completed = 0;
        int completedDuringTransfer = 0;
        bool transferring = false;
        using var stop = new CancellationTokenSource();
        Task[] small = Enumerable.Range(0, 100).Select(caller => Task.Run(async () =>
        {
            for (int n = 0; !stop.IsCancellationRequested; n++)
            {
                Interlocked.Increment(ref started);
                int sum = await host.Proxy.Add(caller, n);
                Assert.Equal(caller + n, sum);
                Interlocked.Increment(ref completed);
                if (Volatile.Read(ref transferring))
                {
                    Interlocked.Increment(ref completedDuringTransfer);
                }
            }
        })).ToArray();

        await Hosts.WaitUntilAsync(() => Volatile.Read(ref completed) >= 100, "the small callers to get going");
        Volatile.Write(ref transferring, true);
        byte[] echoed = await host.Proxy.Echo(data).WaitAsync(TimeSpan.FromMinutes(2));
        Volatile.Write(ref transferring, false);
        stop.Cancel();
        await Task.WhenAll(small).WaitAsync(TestHost.Patience);

        Assert.Equal(data.Length, echoed.Length);
        Assert.True(data.AsSpan().SequenceEqual(echoed), "The echoed payload differs from the one sent.");
        Assert.Equal(started, completed);
        Assert.Equal(completed, host.Service.Adds); // Every call ran once on the server, none twice.
        Assert.True(completedDuringTransfer > 0, "No small call completed while the large message was in flight.");
        Assert.Equal(1, host.Server.ActiveConnections);
    }
}
