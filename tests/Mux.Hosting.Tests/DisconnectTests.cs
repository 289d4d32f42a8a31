using Microsoft.Extensions.DependencyInjection;

namespace Mux.Hosting.Tests;

public sealed class DisconnectTests
{
    private const int InFlight = 50;

    [Fact]
    public async Task AClientThatDisconnects_CancelsEveryHandlersToken_AndDisposesEveryCallsScope()
    {
        await using TestHost server = await TestHost.StartServerAsync(ServiceLifetime.Scoped);
        TestHost client = await TestHost.StartClientAsync(server.ServerEndPoint);
        IHostingTestService proxy = client.Services.GetRequiredService<IHostingTestService>();
        Task[] calls = Enumerable.Range(0, InFlight).Select(i => proxy.WaitForCancellation(i)).ToArray();
        await TestHost.WaitUntilAsync(() => server.Tracker.Waiting == InFlight, "every call is in its handler");
        Assert.Empty(server.Tracker.Disposed);

        await client.DisposeAsync();

        await TestHost.WaitUntilAsync(() => server.Tracker.Canceled.Count == InFlight, "every handler's token has fired");
        Assert.Equal(Enumerable.Range(0, InFlight), server.Tracker.Canceled.Order());
        await TestHost.WaitUntilAsync(() => server.Tracker.Disposed.Count == InFlight, "every call's scope is disposed");
        Assert.Equal(server.Tracker.Created.Order(), server.Tracker.Disposed.Order());
        foreach (Task call in calls)
        {
            await Assert.ThrowsAsync<MuxConnectionException>(() => call.WaitAsync(TestHost.Patience));
        }
    }
}
