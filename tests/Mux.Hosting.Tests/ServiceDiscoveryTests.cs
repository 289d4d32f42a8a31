using System.Net;
using Microsoft.Extensions.Configuration;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Options;
using Microsoft.Extensions.Primitives;
using Microsoft.Extensions.ServiceDiscovery;

namespace Mux.Hosting.Tests;

public sealed class ServiceDiscoveryTests
{
    [Fact]
    public async Task InstancesChangedInReloadedConfiguration_TakeCallsOrAreDrained_WithoutFailingAnyCall()
    {
        await using TestHost a = await TestHost.StartServerAsync();
        await using TestHost b = await TestHost.StartServerAsync();
        await using TestHost c = await TestHost.StartServerAsync();
        // ResolveInterval stays at its default (30 s), longer than the test may take: the client
        // must notice each reload through service discovery's change token.
        var services = new ReloadableConfiguration(("Services:users:mux:0", a.ServerEndPoint.ToString()));
        (HostApplicationBuilder builder, LogSink logs) = TestHost.CreateBuilder(new Dictionary<string, string?>
        {
            ["Mux:Client:Service"] = "mux://users",
        });
        ((IConfigurationBuilder)builder.Configuration).Add(services);
        builder.Services.AddMuxClient().AddProxy<IHostingTestService>();
        await using TestHost client = await TestHost.StartAsync(builder, logs);
        MuxClient muxClient = client.Services.GetRequiredService<MuxClient>();

        await using var load = new AddLoad(client.Services.GetRequiredService<IHostingTestService>(), callers: 50);
        await TestHost.WaitUntilAsync(() => Served(a) >= 200, "the configured instance runs calls");

        services.Replace(("Services:users:mux:0", a.ServerEndPoint.ToString()), ("Services:users:mux:1", b.ServerEndPoint.ToString()));
        await TestHost.WaitUntilAsync(() => Served(b) >= 200, "the added instance runs calls");
        Assert.Equal(0, Served(c));

        services.Replace(("Services:users:mux:0", b.ServerEndPoint.ToString()), ("Services:users:mux:1", c.ServerEndPoint.ToString()));
        await TestHost.WaitUntilAsync(() => Served(c) >= 200, "the instance that replaced the first runs calls");
        await TestHost.WaitUntilAsync(
            () => muxClient.GetEndPointStatistics().Select(e => e.EndPoint).ToHashSet().SetEquals([b.ServerEndPoint, c.ServerEndPoint]),
            "the client uses the new set");

        // The removed instance finishes what it was sent, then the client closes its connection.
        MuxServer removed = a.Services.GetRequiredService<MuxServer>();
        await TestHost.WaitUntilAsync(() => removed.ActiveConnections == 0, "the removed instance's connection is closed");
        int removedServed = Served(a);
        int cServed = Served(c);
        await TestHost.WaitUntilAsync(() => Served(c) >= cServed + 200, "the remaining instances run more calls");
        await load.StopAsync();

        // No call failed, and the instances ran as many calls as succeeded. (That as many calls
        // ended as started needs no check of its own: each caller counts every call it starts as
        // a success or a failure, whatever the client does; the callers finishing is the proof.)
        Assert.Empty(load.Failures);
        Assert.Equal(load.Succeeded, Served(a) + Served(b) + Served(c));
        Assert.Equal(removedServed, Served(a));
        Assert.Equal(1, c.Services.GetRequiredService<MuxServer>().ConnectionsAccepted);
    }

    [Fact]
    public async Task AMuxsService_ConnectsWithTls_ToTheServiceName_ByDefault()
    {
        (HostApplicationBuilder builder, _) = TestHost.CreateBuilder(new Dictionary<string, string?>
        {
            ["Mux:Client:Service"] = "muxs://users",
            ["Services:users:muxs:0"] = "127.0.0.1:5000",
        });
        builder.Services.AddMuxClient();
        using IHost host = builder.Build();

        MuxClientOptions options = host.Services.GetRequiredService<IOptions<MuxClientOptions>>().Value;

        Assert.Equal("users", options.Tls?.TargetHost);
        MuxServiceEndPointResolver resolver = Assert.IsType<MuxServiceEndPointResolver>(options.EndPointResolver);
        Assert.Equal("muxs://users", resolver.ToString());
        Assert.Equal([new IPEndPoint(IPAddress.Loopback, 5000)], await resolver.ResolveAsync(default).AsTask().WaitAsync(TestHost.Patience));
    }

    [Theory]
    [InlineData("users", "mux://NAME for plaintext instances")]
    [InlineData("http://users", "mux://NAME for plaintext instances")]
    [InlineData("muxs+mux://users", "one scheme, not a list")]
    [InlineData("mux://users/path", "mux://NAME for plaintext instances")]
    public void AServiceNameThatIsNotMuxOrMuxs_FailsTheStart_SayingWhatItMustBe(string service, string expected)
    {
        (HostApplicationBuilder builder, _) = TestHost.CreateBuilder(new Dictionary<string, string?> { ["Mux:Client:Service"] = service });
        builder.Services.AddMuxClient();
        using IHost host = builder.Build();

        var error = Assert.Throws<InvalidOperationException>(() => host.Services.GetRequiredService<IOptions<MuxClientOptions>>().Value);
        Assert.Contains($"Mux:Client:Service) is '{service}'", error.Message, StringComparison.Ordinal);
        Assert.Contains(expected, error.Message, StringComparison.Ordinal);
    }

    [Fact]
    public void APlaintextServiceWithTlsSet_FailsTheStart_NamingTheTlsScheme()
    {
        (HostApplicationBuilder builder, _) = TestHost.CreateBuilder();
        builder.Services.AddMuxClient(o =>
        {
            o.Service = "mux://users";
            o.Tls = new();
        });
        using IHost host = builder.Build();

        var error = Assert.Throws<InvalidOperationException>(() => host.Services.GetRequiredService<IOptions<MuxClientOptions>>().Value);
        Assert.Contains("muxs://users", error.Message, StringComparison.Ordinal);
    }

    [Fact]
    public async Task InstancesWithoutAPort_TakeTheNamesPort_OrFailTheResolveSayingWhereToGiveOne()
    {
        var configuration = new ConfigurationBuilder().AddInMemoryCollection(new Dictionary<string, string?>
        {
            ["Services:users:mux:0"] = "10.0.0.5",
            ["Services:users:mux:1"] = "mux://10.0.0.6:6000",
            ["Services:users:mux:2"] = "http://10.0.0.7:80",
            ["Services:orders:mux:0"] = "orders.internal",
        }).Build();
        await using ServiceProvider provider = new ServiceCollection()
            .AddSingleton<IConfiguration>(configuration)
            .AddServiceDiscovery()
            .BuildServiceProvider();
        var discovery = provider.GetRequiredService<Microsoft.Extensions.ServiceDiscovery.ServiceEndpointResolver>();

        IReadOnlyList<EndPoint> users = await new MuxServiceEndPointResolver(discovery, "mux://users:5000").ResolveAsync(default).AsTask().WaitAsync(TestHost.Patience);
        Assert.Equal([new IPEndPoint(IPAddress.Parse("10.0.0.5"), 5000), new IPEndPoint(IPAddress.Parse("10.0.0.6"), 6000)], users);

        var error = await Assert.ThrowsAsync<InvalidOperationException>(() => new MuxServiceEndPointResolver(discovery, "mux://orders").ResolveAsync(default).AsTask().WaitAsync(TestHost.Patience));
        Assert.Contains("Services:orders:mux:0", error.Message, StringComparison.Ordinal);
        Assert.Contains("mux://orders:5000", error.Message, StringComparison.Ordinal);
    }

    [Fact]
    public async Task AnInstanceWithoutAPort_IsSkippedWithAWarningNamingIt_AndTheOthersTakeTheCalls()
    {
        await using TestHost server = await TestHost.StartServerAsync();
        (HostApplicationBuilder builder, LogSink logs) = TestHost.CreateBuilder(new Dictionary<string, string?>
        {
            ["Mux:Client:Service"] = "mux://users",
            ["Mux:Client:CallTimeout"] = "00:00:05",
            ["Services:users:mux:0"] = "127.0.0.1",
            ["Services:users:mux:1"] = server.ServerEndPoint.ToString(),
        });
        builder.Services.AddMuxClient().AddProxy<IHostingTestService>();
        await using TestHost client = await TestHost.StartAsync(builder, logs);

        // The old code failed the whole resolve: the client found no instance, and the call
        // waited out its CallTimeout.
        Assert.Equal(3, await client.Services.GetRequiredService<IHostingTestService>().Add(1, 2).AsTask().WaitAsync(TestHost.Patience));

        var warning = Assert.Single(logs.Entries, e => e.Category == "Mux.Hosting" && e.EventId.Id == 108);
        Assert.Equal(Microsoft.Extensions.Logging.LogLevel.Warning, warning.Level);
        Assert.Contains("'127.0.0.1'", warning.Message, StringComparison.Ordinal);
        Assert.Contains("mux://users", warning.Message, StringComparison.Ordinal);
    }

    [Fact]
    public async Task WhenNoInstanceHasAPort_TheResolveFails_NamingEveryOneOfThem()
    {
        var configuration = new ConfigurationBuilder().AddInMemoryCollection(new Dictionary<string, string?>
        {
            ["Services:users:mux:0"] = "10.0.0.5",
            ["Services:users:mux:1"] = "users.internal",
            ["Services:users:mux:2"] = "http://10.0.0.7:80",
        }).Build();
        await using ServiceProvider provider = new ServiceCollection()
            .AddSingleton<IConfiguration>(configuration)
            .AddServiceDiscovery()
            .BuildServiceProvider();
        var resolver = new MuxServiceEndPointResolver(provider.GetRequiredService<ServiceEndpointResolver>(), "mux://users");

        var error = await Assert.ThrowsAsync<InvalidOperationException>(() => resolver.ResolveAsync(default).AsTask().WaitAsync(TestHost.Patience));

        Assert.Contains("'10.0.0.5'", error.Message, StringComparison.Ordinal);
        Assert.Contains("'users.internal'", error.Message, StringComparison.Ordinal);
        Assert.DoesNotContain("10.0.0.7", error.Message, StringComparison.Ordinal);
        Assert.Contains("mux://users:5000", error.Message, StringComparison.Ordinal);
    }

    [Fact]
    public async Task AResolveThatFailsAfterAChange_IsNotTakenForAnotherChange()
    {
        var provider = new FlakyProvider();
        await using ServiceProvider services = new ServiceCollection()
            .AddServiceDiscoveryCore()
            .AddSingleton<IServiceEndpointProviderFactory>(provider)
            .BuildServiceProvider();
        var resolver = new MuxServiceEndPointResolver(services.GetRequiredService<ServiceEndpointResolver>(), "mux://users");
        Assert.Equal([new IPEndPoint(IPAddress.Parse("10.0.0.5"), 5000)], await resolver.ResolveAsync(default).AsTask().WaitAsync(TestHost.Patience));

        provider.Fail = true;
        provider.Change();
        await resolver.WaitForChangeAsync(default).AsTask().WaitAsync(TestHost.Patience);
        Assert.Equal("discovery is down", (await Assert.ThrowsAsync<InvalidOperationException>(() => resolver.ResolveAsync(default).AsTask().WaitAsync(TestHost.Patience))).Message);

        // The old code kept the changed token of the last answer, so the wait returned at once,
        // after every failed ask: the client asked a resolver that was down again and again.
        using var stop = new CancellationTokenSource();
        Task wait = resolver.WaitForChangeAsync(stop.Token).AsTask();
        Assert.False(wait.IsCompleted);
        await stop.CancelAsync();
        await Assert.ThrowsAnyAsync<OperationCanceledException>(() => wait.WaitAsync(TestHost.Patience));
    }

    /// <summary>Finds users at 10.0.0.5:5000, with a change token the test fires, until told to fail.</summary>
    private sealed class FlakyProvider : IServiceEndpointProviderFactory, IServiceEndpointProvider
    {
        private CancellationTokenSource _change = new();

        public volatile bool Fail;

        public void Change() => _change.Cancel();

        public bool TryCreateProvider(ServiceEndpointQuery query, [System.Diagnostics.CodeAnalysis.NotNullWhen(true)] out IServiceEndpointProvider? provider)
        {
            provider = this;
            return true;
        }

        public ValueTask PopulateAsync(IServiceEndpointBuilder endpoints, CancellationToken cancellationToken)
        {
            if (Fail)
            {
                throw new InvalidOperationException("discovery is down");
            }

            _change = new CancellationTokenSource();
            endpoints.Endpoints.Add(ServiceEndpoint.Create(new IPEndPoint(IPAddress.Parse("10.0.0.5"), 5000)));
            endpoints.AddChangeToken(new CancellationChangeToken(_change.Token));
            return ValueTask.CompletedTask;
        }

        public ValueTask DisposeAsync() => ValueTask.CompletedTask;
    }

    private static int Served(TestHost server) => server.Tracker.Created.Count;

    /// <summary>Callers that each call Add in a loop until stopped, counting how every call ended.</summary>
    private sealed class AddLoad : IAsyncDisposable
    {
        private readonly CancellationTokenSource _stop = new();
        private readonly Task[] _callers;
        private int _started;
        private int _succeeded;

        public AddLoad(IHostingTestService proxy, int callers)
        {
            _callers = new Task[callers];
            for (int i = 0; i < callers; i++)
            {
                int caller = i;
                _callers[i] = Task.Run(() => CallAsync(proxy, caller));
            }
        }

        public int Started => Volatile.Read(ref _started);

        public int Succeeded => Volatile.Read(ref _succeeded);

        public System.Collections.Concurrent.ConcurrentQueue<Exception> Failures { get; } = new();

        public async Task StopAsync()
        {
            _stop.Cancel();
            await Task.WhenAll(_callers).WaitAsync(TestHost.Patience);
        }

        public async ValueTask DisposeAsync()
        {
            _stop.Cancel();
            await Task.WhenAll(_callers).WaitAsync(TestHost.Patience);
            _stop.Dispose();
        }

        private async Task CallAsync(IHostingTestService proxy, int caller)
        {
            for (int i = 0; !_stop.IsCancellationRequested; i++)
            {
                Interlocked.Increment(ref _started);
                try
                {
                    Assert.Equal(caller + i, await proxy.Add(caller, i));
                    Interlocked.Increment(ref _succeeded);
                }
                catch (Exception ex)
                {
                    Failures.Enqueue(ex);
                }
            }
        }
    }
}
