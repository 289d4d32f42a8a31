using Mux.Tests.Infrastructure;

namespace Mux.Tests.Races;

/// <summary>
/// Cancellation reaches exactly the handler it is meant for, with many calls in flight: the
/// caller's token, the call timeout and a lost connection each cancel the server handlers' tokens.
/// </summary>
public sealed class CancellationUnderLoadTests
{
    private const int InFlight = 200;

    [Theory]
    [InlineData(TransportKind.InMemory)]
    [InlineData(TransportKind.Tcp)]
    public async Task CancellingOneCallOf200InFlight_CancelsOnlyThatHandlersToken_AndTheOthersGetTheirOwnResults(TransportKind kind)
    {
        await using TestHost host = await Hosts.StartAsync(kind);
        CancellationTokenSource[] callers = Enumerable.Range(0, InFlight).Select(_ => new CancellationTokenSource()).ToArray();
        Task<int>[] calls = Enumerable.Range(0, InFlight).Select(i => host.RaceProxy.Hold(i, callers[i].Token)).ToArray();
        await Hosts.WaitUntilAsync(() => host.Race.HoldStarted == InFlight, "every call is in its handler");
        const int victim = 73;

        callers[victim].Cancel();

        OperationCanceledException error = await Assert.ThrowsAnyAsync<OperationCanceledException>(() => calls[victim]).WaitAsync(TestHost.Patience);
        Assert.Equal(callers[victim].Token, error.CancellationToken);
        await host.Race.HoldCanceled(victim).WaitAsync(TestHost.Patience);
        for (int i = 0; i < InFlight; i++)
        {
            host.Race.ReleaseHold(i);
        }

        for (int i = 0; i < InFlight; i++)
        {
            if (i != victim)
            {
                Assert.Equal(i, await calls[i].WaitAsync(TestHost.Patience));
            }
        }

        Assert.Equal([victim], host.Race.HoldCanceledIds);
        Assert.Equal(0, host.Client.PendingCalls);
        foreach (CancellationTokenSource caller in callers)
        {
            caller.Dispose();
        }
    }

    [Theory]
    [InlineData(TransportKind.InMemory)]
    [InlineData(TransportKind.Tcp)]
    public async Task ACallTimeout_CancelsTheServerHandlersToken_AndOnlyThatOne(TransportKind kind)
    {
        await using TestHost host = await Hosts.StartAsync(kind, clientOptions: new MuxClientOptions { CallTimeout = TimeSpan.FromMilliseconds(300) });
        using var longer = new CancellationTokenSource();
        MuxClient patient = await host.ConnectAnotherClientAsync(new MuxClientOptions { CallTimeout = Timeout.InfiniteTimeSpan });
        await using (patient)
        {
            // A call on a connection without a deadline runs beside the one that times out.
            Task<int> untimed = patient.CreateProxy<IRaceService>().Hold(2, longer.Token);
            Task<int> timed = host.RaceProxy.Hold(1);

            TimeoutException error = await Assert.ThrowsAsync<TimeoutException>(() => timed).WaitAsync(TestHost.Patience);

            Assert.Contains("MuxClientOptions.CallTimeout", error.Message, StringComparison.Ordinal);
            await host.Race.HoldCanceled(1).WaitAsync(TestHost.Patience);
            Assert.Equal([1], host.Race.HoldCanceledIds);
            host.Race.ReleaseHold(2);
            Assert.Equal(2, await untimed.WaitAsync(TestHost.Patience));
            Assert.Equal(0, host.Client.PendingCalls);

            // The connection still serves calls (one the short timeout cuts on a slow machine is made again).
            Assert.Equal(5, await Hosts.AnswerDespiteAShortCallTimeoutAsync(() => host.Proxy.Add(2, 3).AsTask()));
        }
    }

    [Theory]
    [InlineData(TransportKind.InMemory)]
    [InlineData(TransportKind.Tcp)]
    public async Task AClientThatDisconnects_CancelsTheTokenOfEveryHandlerItStarted_AndNoOtherClients(TransportKind kind)
    {
        await using TestHost host = await Hosts.StartAsync(kind);
        MuxClient other = await host.ConnectAnotherClientAsync();
        await using (other)
        {
            Task<int> bystander = other.CreateProxy<IRaceService>().Hold(InFlight);
            Task<int>[] calls = Enumerable.Range(0, InFlight).Select(i => host.RaceProxy.Hold(i)).ToArray();
            await Hosts.WaitUntilAsync(() => host.Race.HoldStarted == InFlight + 1, "every call is in its handler");

            await host.Client.DisposeAsync().AsTask().WaitAsync(TestHost.Patience);

            for (int i = 0; i < InFlight; i++)
            {
                await host.Race.HoldCanceled(i).WaitAsync(TestHost.Patience);
                MuxConnectionException error = await Assert.ThrowsAsync<MuxConnectionException>(() => calls[i]).WaitAsync(TestHost.Patience);
                Assert.Equal(MuxCloseReason.LocalShutdown, error.Reason);
            }

            Assert.Equal(Enumerable.Range(0, InFlight), host.Race.HoldCanceledIds);
            host.Race.ReleaseHold(InFlight);
            Assert.Equal(InFlight, await bystander.WaitAsync(TestHost.Patience));
        }
    }
}
