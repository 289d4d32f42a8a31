using Mux.Tests.Infrastructure;

namespace Mux.Tests.Server;

public sealed class SecondStopTests
{
    /// <summary>
    /// A stop that comes while another is draining (a DisposeAsync during a StopAsync without a
    /// deadline, say) must keep its own promise: when its token fires, the calls still running are
    /// cancelled and the server stops. It used to wait for the first stop's drain, whatever its token.
    /// </summary>
    [Fact]
    public async Task ASecondStopsToken_CancelsTheCallsTheFirstStopIsWaitingFor()
    {
        TestHost host = await TestHost.StartInMemoryAsync();
        Task call = host.Proxy.WaitForCancellation(); // Runs 30 s unless cancelled.
        await host.Service.WaitStarted.Task.WaitAsync(TestHost.Patience);

        Task first = host.Server.StopAsync(); // No deadline: waits for the call.
        using var hurry = new CancellationTokenSource();
        Task second = host.Server.StopAsync(hurry.Token);
        Assert.False(second.IsCompleted);
        await hurry.CancelAsync();

        await host.Service.CancellationObserved.Task.WaitAsync(TestHost.Patience);
        await Task.WhenAll(first, second).WaitAsync(TestHost.Patience);
        Assert.Equal(0, host.Server.ActiveConnections);
        await Assert.ThrowsAnyAsync<Exception>(() => call.WaitAsync(TestHost.Patience));
        await host.DisposeAsync();
    }
}
