using Mux.Tests.Client.Balancing;
using Mux.Tests.Infrastructure;

namespace Mux.Tests.Client;

/// <summary>
/// <see cref="MuxClient.Completion"/> and the Closed state mean what they say: once the client
/// reports itself closed by a dispose, its connections are closed too (a handler of the change, or
/// code awaiting Completion, reads the closed connection's reason, not an open connection's None).
/// </summary>
public sealed class DisposeOrderTests
{
    [Fact]
    public async Task OneEndPoint_ClosedIsReported_OnceItsConnectionHasClosed()
    {
        await using BalanceCluster cluster = await BalanceCluster.StartAsync(1);
        MuxClient client = await MuxClient.ConnectAsync(cluster.EndPoints[0]).WaitAsync(TestHost.Patience);
        Task connectionClosed = client.Connection.Completion;
        bool? closedFirst = null;
        client.StateChanged += (_, change) => closedFirst ??= change.State == MuxClientState.Closed ? connectionClosed.IsCompleted : null;

        ValueTask dispose = client.DisposeAsync();
        await client.Completion.WaitAsync(TestHost.Patience);

        Assert.True(connectionClosed.IsCompleted, "The client completed before its connection closed.");
        Assert.Equal(true, closedFirst);
        Assert.Equal(MuxCloseReason.LocalShutdown, client.CloseReason);
        await dispose.AsTask().WaitAsync(TestHost.Patience);
    }

    [Fact]
    public async Task SeveralInstances_ClosedIsReported_OnceEveryInstanceHasClosed()
    {
        await using BalanceCluster cluster = await BalanceCluster.StartAsync(3);
        MuxClient client = await MuxClient.ConnectAsync(cluster.ClientOptions()).WaitAsync(TestHost.Patience);
        await Hosts.WaitUntilAsync(() => client.GetEndPointStatistics().All(e => e.State == MuxClientState.Connected), "every instance is connected");

        ValueTask dispose = client.DisposeAsync();
        await client.Completion.WaitAsync(TestHost.Patience);

        Assert.Equal([MuxClientState.Closed, MuxClientState.Closed, MuxClientState.Closed], client.GetEndPointStatistics().Select(e => e.State));
        Assert.False(client.IsConnected);
        await dispose.AsTask().WaitAsync(TestHost.Patience);
    }

    [Fact]
    public async Task SeveralInstances_ASecondDisposeMeanwhile_CompletesOnlyOnceEveryInstanceHasClosed()
    {
        await using BalanceCluster cluster = await BalanceCluster.StartAsync(3);
        MuxClient client = await MuxClient.ConnectAsync(cluster.ClientOptions()).WaitAsync(TestHost.Patience);
        await Hosts.WaitUntilAsync(() => client.GetEndPointStatistics().All(e => e.State == MuxClientState.Connected), "every instance is connected");

        ValueTask first = client.DisposeAsync();
        await client.DisposeAsync().AsTask().WaitAsync(TestHost.Patience);

        Assert.Equal([MuxClientState.Closed, MuxClientState.Closed, MuxClientState.Closed], client.GetEndPointStatistics().Select(e => e.State));
        Assert.Equal(MuxClientState.Closed, client.State);
        await first.AsTask().WaitAsync(TestHost.Patience);
    }
}
