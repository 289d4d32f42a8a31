using System.Collections.Concurrent;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Options;

namespace Mux.Hosting.Tests;

/// <summary>
/// Interceptors registered through dependency injection (issue 25): AddInterceptor&lt;T&gt;() on
/// both builders resolves T from the host's services (with its own dependencies), once, and runs
/// it after the interceptors the configure delegate added, in the order they were added.
/// </summary>
public sealed class InterceptorTests
{
    /// <summary>What the interceptors of one host saw, in order; a singleton of that host.</summary>
    public sealed class CallJournal
    {
        public ConcurrentQueue<string> Lines { get; } = new();
    }

    /// <summary>An interceptor a configure delegate adds, by hand.</summary>
    public sealed class FromOptions(CallJournal journal) : IMuxServerInterceptor
    {
        public async ValueTask InvokeAsync(MuxCallContext call, Func<ValueTask> next)
        {
            journal.Lines.Enqueue("options enter");
            await next();
            journal.Lines.Enqueue("options exit");
        }
    }

    /// <summary>The first server interceptor added through the builder.</summary>
    public sealed class Outer(CallJournal journal) : IMuxServerInterceptor
    {
        public async ValueTask InvokeAsync(MuxCallContext call, Func<ValueTask> next)
        {
            journal.Lines.Enqueue("outer enter");
            await next();
            journal.Lines.Enqueue("outer exit");
        }
    }

    /// <summary>The second: refuses a call without a tenant, and writes the tenant it saw.</summary>
    public sealed class TenantCheck(CallJournal journal) : IMuxServerInterceptor
    {
        public async ValueTask InvokeAsync(MuxCallContext call, Func<ValueTask> next)
        {
            if (!call.Metadata.TryGetValue("tenant", out string? tenant))
            {
                throw new MuxRemoteException(MuxStatusCode.PermissionDenied, "No tenant.");
            }

            journal.Lines.Enqueue($"tenant {tenant} {call.MethodName}");
            await next();
        }
    }

    /// <summary>A client interceptor that stamps the tenant its host knows.</summary>
    public sealed class TenantStamp(CallJournal journal) : IMuxClientInterceptor
    {
        public async ValueTask InvokeAsync(MuxClientCall call, Func<ValueTask> next)
        {
            call.Metadata["tenant"] = "acme";
            journal.Lines.Enqueue($"stamp {call.MethodName}");
            await next();
        }
    }

    /// <summary>Breaks the rule that a client interceptor must not depend on the client: its
    /// proxy needs the client, which needs this interceptor to exist.</summary>
    public sealed class NeedsTheClient(IHostingTestService proxy) : IMuxClientInterceptor
    {
        public IHostingTestService Proxy { get; } = proxy;

        public ValueTask InvokeAsync(MuxClientCall call, Func<ValueTask> next) => next();
    }

    [Fact]
    public async Task InterceptorsAddedThroughTheBuilders_AreResolvedFromTheHostsServices_AndRunAfterTheConfiguredOnes_InTheOrderAdded()
    {
        var serverJournal = new CallJournal();
        await using TestHost server = await TestHost.StartServerAsync(configure: b =>
        {
            b.Services.AddSingleton(serverJournal);
            b.Services.AddMuxServer(o => o.Interceptors.Add(new FromOptions(serverJournal)))
                .AddInterceptor<Outer>()
                .AddInterceptor<TenantCheck>();
        });
        var clientJournal = new CallJournal();
        await using TestHost client = await TestHost.StartClientAsync(server.ServerEndPoint, configure: b =>
        {
            b.Services.AddSingleton(clientJournal);
            b.Services.AddMuxClient().AddInterceptor<TenantStamp>();
        });

        Assert.Equal(5, await client.Services.GetRequiredService<IHostingTestService>().Add(2, 3).AsTask().WaitAsync(TestHost.Patience));

        // The client stamped the tenant the server's second interceptor checked.
        Assert.Equal(["stamp IHostingTestService.Add"], clientJournal.Lines);
        Assert.Equal(["options enter", "outer enter", "tenant acme IHostingTestService.Add", "outer exit", "options exit"], serverJournal.Lines);

        // Each is the host's singleton, resolved once.
        IList<IMuxServerInterceptor> serverInterceptors = server.Services.GetRequiredService<IOptions<MuxServerOptions>>().Value.Interceptors;
        Assert.Equal(3, serverInterceptors.Count);
        Assert.Same(server.Services.GetRequiredService<Outer>(), serverInterceptors[1]);
        Assert.Same(server.Services.GetRequiredService<TenantCheck>(), serverInterceptors[2]);
        IMuxClientInterceptor clientInterceptor = Assert.Single(client.Services.GetRequiredService<IOptions<MuxClientOptions>>().Value.Interceptors);
        Assert.Same(client.Services.GetRequiredService<TenantStamp>(), clientInterceptor);
    }

    [Fact]
    public async Task AServerInterceptorFromTheServices_RefusesACallFromAClientWithoutIt()
    {
        var serverJournal = new CallJournal();
        await using TestHost server = await TestHost.StartServerAsync(configure: b =>
        {
            b.Services.AddSingleton(serverJournal);
            b.Services.AddMuxServer().AddInterceptor<TenantCheck>();
        });
        await using TestHost client = await TestHost.StartClientAsync(server.ServerEndPoint);

        MuxRemoteException refused = await Assert.ThrowsAsync<MuxRemoteException>(() => client.Services.GetRequiredService<IHostingTestService>().Add(2, 3).AsTask().WaitAsync(TestHost.Patience));

        Assert.Equal(MuxStatusCode.PermissionDenied, refused.StatusCode);
        Assert.Equal("No tenant.", refused.Message);
        Assert.Empty(serverJournal.Lines);
    }

    [Fact]
    public void AClientInterceptorThatDependsOnTheClient_FailsItsResolutionWithAnErrorThatSaysSo()
    {
        // It recursed (client, its options, the interceptor, the proxy, the client...) until the
        // stack overflowed, which ends the process rather than failing the host's start.
        var services = new ServiceCollection();
        services.AddMuxClient(o => o.EndPoint = new System.Net.IPEndPoint(System.Net.IPAddress.Loopback, 1))
            .AddProxy<IHostingTestService>()
            .AddInterceptor<NeedsTheClient>();
        using ServiceProvider provider = services.BuildServiceProvider();

        var error = Assert.Throws<InvalidOperationException>(() => provider.GetRequiredService<MuxClient>());
        Assert.Contains("while it is being created", error.Message, StringComparison.Ordinal);
        Assert.Contains("AddInterceptor", error.Message, StringComparison.Ordinal);

        // Nothing half-made stays behind: the next resolution fails the same way.
        Assert.Contains("while it is being created", Assert.Throws<InvalidOperationException>(() => provider.GetRequiredService<IHostingTestService>()).Message, StringComparison.Ordinal);
    }

    /// <summary>Ships log entries through the client's proxy: the client's options take the
    /// logger factory, which needs this provider, which needs the client.</summary>
    public sealed class ShipsLogsThroughTheClient(IHostingTestService proxy) : ILoggerProvider
    {
        public IHostingTestService Proxy { get; } = proxy;

        public ILogger CreateLogger(string categoryName) => Microsoft.Extensions.Logging.Abstractions.NullLogger.Instance;

        public void Dispose()
        {
        }
    }

    [Fact]
    public async Task ALoggerProviderThatDependsOnTheClient_FailsItsResolutionWithAnErrorThatSaysSo()
    {
        var services = new ServiceCollection();
        services.AddLogging();
        services.AddSingleton<ILoggerProvider, ShipsLogsThroughTheClient>();
        services.AddMuxClient(o => o.EndPoint = new System.Net.IPEndPoint(System.Net.IPAddress.Loopback, 1))
            .AddProxy<IHostingTestService>();
        await using ServiceProvider provider = services.BuildServiceProvider();

        // The old code recursed through the holder's constructor (its options, the logger factory,
        // this provider, the proxy, a new holder...) until DI's stack guard moved the recursion to
        // another thread, which waited for DI's lock held by the first: the resolve never returned.
        var error = await Assert.ThrowsAsync<InvalidOperationException>(() => TestHost.RunOnOwnThread(() => provider.GetRequiredService<IHostingTestService>()).WaitAsync(TestHost.Patience));
        Assert.Contains("while it is being created", error.Message, StringComparison.Ordinal);
        Assert.Contains("logger provider", error.Message, StringComparison.Ordinal);
    }
}
