using System.Net.Sockets;
using Mux.Tests.Infrastructure;

namespace Mux.Tests.Client.Balancing;

/// <summary>
/// A client without AutoReconnect that closed because its servers went away tells its calls why,
/// over several instances as over one: a call fails with the last connection's close error (its
/// reason, its server), not with a bare "The Mux client for X is closed." that loses the cause.
/// </summary>
public sealed class BalancedClientClosedTests
{
    /// <summary>
    /// Every instance's server closes its connection, the last one after the others have closed:
    /// the balanced client is Closed, and its calls failed with "The Mux client for A, B is closed."
    /// (reason LocalShutdown, no inner exception), where a client over one endpoint reports its
    /// connection's close error (reason and server).
    /// </summary>
    [Theory]
    [InlineData(false)]
    [InlineData(true)]
    public async Task AClientWithoutAutoReconnect_ClosedByItsServersGoingAway_FailsCallsWithWhy(bool balanced)
    {
        using TcpListener lastListener = RawMuxPeer.Listen();
        using TcpListener firstListener = RawMuxPeer.Listen();
        var options = new MuxClientOptions { AutoReconnect = false, KeepAliveInterval = Timeout.InfiniteTimeSpan };
        if (balanced)
        {
            options.EndPoints.Add(firstListener.LocalEndpoint);
            options.EndPoints.Add(lastListener.LocalEndpoint);
        }
        else
        {
            options.EndPoint = lastListener.LocalEndpoint;
        }

        Task<MuxClient> connecting = MuxClient.ConnectAsync(options);
        RawMuxPeer last = await RawMuxPeer.AcceptAsync(lastListener).WaitAsync(TestHost.Patience);
        RawMuxPeer? first = balanced ? await RawMuxPeer.AcceptAsync(firstListener).WaitAsync(TestHost.Patience) : null;
        MuxClient? client = null;
        try
        {
            await last.AnswerHelloAsync();
            if (first is not null)
            {
                await first.AnswerHelloAsync();
            }

            client = await connecting.WaitAsync(TestHost.Patience);
            if (first is not null)
            {
                // Both instances connected, then the first goes away; the client stays up on the last.
                await WaitUntilAsync(() => client.GetEndPointStatistics().All(instance => instance.State == MuxClientState.Connected));
                first.Dispose();
                await WaitUntilAsync(() => client.GetEndPointStatistics().Any(instance => instance.EndPoint.Equals(firstListener.LocalEndpoint) && instance.State == MuxClientState.Closed));
                Assert.Equal(MuxClientState.Connected, client.State);
            }

            last.Dispose();
            await client.Completion.WaitAsync(TestHost.Patience);
            Assert.Equal(MuxClientState.Closed, client.State);

            MuxConnectionException waits = await Assert.ThrowsAsync<MuxConnectionException>(() => client.CreateProxy<ITestService>().Add(1, 2).AsTask().WaitAsync(TestHost.Patience));
            MuxConnectionException doesNotWait = await Assert.ThrowsAsync<MuxConnectionException>(() => client.CreateProxy<ITestService>(new MuxCallOptions { WaitForConnection = false }).Add(1, 2).AsTask().WaitAsync(TestHost.Patience));
            foreach (MuxConnectionException failed in new[] { waits, doesNotWait })
            {
                // Why: the last connection's close, by its server, not this side's shutdown.
                Assert.False(failed.IsSafeToRetry, failed.Message);
                Assert.NotEqual(MuxCloseReason.LocalShutdown, failed.Reason);
                Assert.NotEqual(MuxCloseReason.None, failed.Reason);
                Assert.Equal(client.CloseReason, failed.Reason);
                Assert.Contains(lastListener.LocalEndpoint.ToString()!, failed.Message, StringComparison.Ordinal);
            }
        }
        finally
        {
            first?.Dispose();
            last.Dispose();
            if (client is not null)
            {
                await client.DisposeAsync().AsTask().WaitAsync(TestHost.Patience);
            }
        }
    }

    private static async Task WaitUntilAsync(Func<bool> condition)
    {
        using var patience = new CancellationTokenSource(TestHost.Patience);
        while (!condition())
        {
            await Task.Delay(10, patience.Token);
        }
    }
}
