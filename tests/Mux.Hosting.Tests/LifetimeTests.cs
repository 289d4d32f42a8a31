using Microsoft.Extensions.DependencyInjection;

namespace Mux.Hosting.Tests;

public sealed class LifetimeTests
{
    [Fact]
    public async Task ScopedGivesEachCallItsOwnInstanceAndDisposesItsScope()
    {
        TestHost server = await TestHost.StartServerAsync(ServiceLifetime.Scoped);
        await using (server)
        {
            await using TestHost client = await TestHost.StartClientAsync(server.ServerEndPoint);
            IHostingTestService proxy = client.Services.GetRequiredService<IHostingTestService>();

            int first = await proxy.GetInstanceId();
            int second = await proxy.GetInstanceId();

            Assert.NotEqual(first, second);
            await TestHost.WaitUntilAsync(() => server.Tracker.Disposed.Count == 2, "both scopes are disposed");
            Assert.Equal([first, second], server.Tracker.Disposed.Order());
            Assert.Equal(2, server.Tracker.Created.Count);
        }
    }

    [Fact]
    public async Task ScopedGivesConcurrentCallsDistinctInstances()
    {
        await using TestHost server = await TestHost.StartServerAsync(ServiceLifetime.Scoped);
        await using TestHost client = await TestHost.StartClientAsync(server.ServerEndPoint);
        IHostingTestService proxy = client.Services.GetRequiredService<IHostingTestService>();

        int[] ids = await Task.WhenAll(Enumerable.Range(0, 50).Select(_ => proxy.GetInstanceId())).WaitAsync(TestHost.Patience);

        Assert.Equal(50, ids.Distinct().Count());
        await TestHost.WaitUntilAsync(() => server.Tracker.Disposed.Count == 50, "every scope is disposed");
        Assert.Equal(ids.Order(), server.Tracker.Disposed.Order());
    }

    [Fact]
    public async Task ScopedDisposesTheScopeOfAFailedCall()
    {
        await using TestHost server = await TestHost.StartServerAsync(ServiceLifetime.Scoped);
        await using TestHost client = await TestHost.StartClientAsync(server.ServerEndPoint);

        await Assert.ThrowsAsync<MuxRemoteException>(() => client.Services.GetRequiredService<IHostingTestService>().Fail("boom"));

        await TestHost.WaitUntilAsync(() => server.Tracker.Disposed.Count == 1, "the failed call's scope is disposed");
    }

    [Fact]
    public async Task TransientAlsoGivesEachCallItsOwnInstance()
    {
        await using TestHost server = await TestHost.StartServerAsync(ServiceLifetime.Transient);
        await using TestHost client = await TestHost.StartClientAsync(server.ServerEndPoint);
        IHostingTestService proxy = client.Services.GetRequiredService<IHostingTestService>();

        Assert.NotEqual(await proxy.GetInstanceId(), await proxy.GetInstanceId());
        await TestHost.WaitUntilAsync(() => server.Tracker.Disposed.Count == 2, "both scopes are disposed");
    }

    [Fact]
    public async Task SingletonServesEveryCallWithOneInstance()
    {
        TestHost server = await TestHost.StartServerAsync(ServiceLifetime.Singleton);
        await using (server)
        {
            await using TestHost client = await TestHost.StartClientAsync(server.ServerEndPoint);
            IHostingTestService proxy = client.Services.GetRequiredService<IHostingTestService>();

            int[] ids = await Task.WhenAll(Enumerable.Range(0, 20).Select(_ => proxy.GetInstanceId())).WaitAsync(TestHost.Patience);

            Assert.Single(ids.Distinct());
            Assert.Single(server.Tracker.Created);
            Assert.Empty(server.Tracker.Disposed);
        }

        // The container owns the singleton and disposes it with the host.
        Assert.Single(server.Tracker.Disposed);
    }

    [Fact]
    public void AddingTheSameServiceTwiceThrows()
    {
        var services = new ServiceCollection();
        MuxServerBuilder builder = services.AddMuxServer().AddService<IHostingTestService, HostingTestService>();

        var error = Assert.Throws<InvalidOperationException>(() => builder.AddService<IHostingTestService, HostingTestService>(ServiceLifetime.Singleton));
        Assert.Contains(typeof(IHostingTestService).FullName!, error.Message, StringComparison.Ordinal);
        Assert.Throws<ArgumentOutOfRangeException>(() => services.AddMuxServer().AddService<IOtherService, OtherService>((ServiceLifetime)42));
    }

    [Fact]
    public void AnImplementationRegisteredBeforeIsKept()
    {
        var services = new ServiceCollection();
        services.AddSingleton<HostingTestService>();
        services.AddMuxServer().AddService<IHostingTestService, HostingTestService>();

        Assert.Equal(ServiceLifetime.Singleton, Assert.Single(services, d => d.ServiceType == typeof(HostingTestService)).Lifetime);
    }

    public interface IOtherService
    {
    }

    public sealed class OtherService : IOtherService
    {
    }
}
