using System.Net;
using Microsoft.Extensions.DependencyInjection;

namespace Mux.Hosting.Tests;

/// <summary>A service the hosted client serves to its server (MuxClientBuilder.AddService).</summary>
public sealed class ClientServiceTests
{
    [Fact]
    public async Task AServiceAddedToTheHostedClient_IsResolvedFromDI_AndAnswersTheServersCallsBack()
    {
        await using MuxServer server = await StartHubServerAsync();

        await using TestHost client = await TestHost.StartClientAsync((IPEndPoint)server.LocalEndPoint!, configure: b => b.Services.AddMuxClient()
            .AddProxy<IHostingHub>()
            .AddService<IHostingCallback, HostingCallback>()
            .AddService<IHostingCallback, HostingCallback>()); // Twice: registered once.

        string answer = await client.Services.GetRequiredService<IHostingHub>().AskClient("ping").WaitAsync(TestHost.Patience);

        Assert.Equal("the client said: pong to ping (tracker resolved)", answer);
    }

    [Fact]
    public async Task AServiceThatFailsWhileTheClientIsCreated_FailsTheResolveWithItsException_AndALaterResolveMakesAWholeClient()
    {
        await using MuxServer server = await StartHubServerAsync();
        var services = new ServiceCollection();
        services.AddSingleton(new FailOnce());
        services.AddMuxClient(o => o.EndPoint = server.LocalEndPoint)
            .AddProxy<IHostingHub>()
            .AddService<IHostingCallback, FailingCallback>();
        await using ServiceProvider provider = services.BuildServiceProvider();

        // The callback's own exception, not a wrapper: it says what went wrong.
        var error = Assert.Throws<CallbackBrokeException>(() => provider.GetRequiredService<MuxClient>());
        Assert.Equal("not ready yet", error.Message);

        // The half-made client was closed, not kept: the next resolve makes a whole one, which
        // answers the server's call back (the old code handed out the half-made one, which did not).
        MuxClient client = provider.GetRequiredService<MuxClient>();
        Assert.Equal("the client said: fine to ping", await provider.GetRequiredService<IHostingHub>().AskClient("ping").WaitAsync(TestHost.Patience));
        await TestHost.WaitUntilAsync(() => server.ActiveConnections == 1 && client.State == MuxClientState.Connected, "only the whole client stays connected");
    }

    [Fact]
    public async Task AServiceThatFailsAfterTheClientWasHandedToAnother_ClosesIt_AndLaterResolvesFailTheSameClearWay()
    {
        await using MuxServer server = await StartHubServerAsync();
        var services = new ServiceCollection();
        services.AddMuxClient(o => o.EndPoint = server.LocalEndPoint)
            .AddProxy<IHostingHub>()
            .AddService<IHostingCallback, CallbackThatInjectsAProxyAndFails>();
        await using ServiceProvider provider = services.BuildServiceProvider();

        Assert.Equal("no callback today", Assert.Throws<CallbackBrokeException>(() => provider.GetRequiredService<IHostingHub>()).Message);

        // DI keeps the proxy the failed service was given: a new client would not be its, so none
        // is made. Its client is closed (the old code left it connected, and the host's start
        // went on with it).
        IHostingHub handedOut = provider.GetRequiredService<IHostingHub>();
        await Assert.ThrowsAsync<MuxConnectionException>(() => handedOut.AskClient("anyone?").WaitAsync(TestHost.Patience));
        await TestHost.WaitUntilAsync(() => server.ActiveConnections == 0, "no connection stays open");
        var again = await Assert.ThrowsAsync<InvalidOperationException>(() => provider.GetServices<Microsoft.Extensions.Hosting.IHostedService>().Single().StartAsync(default).WaitAsync(TestHost.Patience));
        Assert.IsType<CallbackBrokeException>(again.InnerException);
        Assert.Contains("no callback today", again.Message, StringComparison.Ordinal);
        Assert.Same(again.InnerException, Assert.Throws<InvalidOperationException>(() => provider.GetRequiredService<MuxClient>()).InnerException);
    }

    [Theory]
    [InlineData(true)]
    [InlineData(false)]
    public async Task AProxyResolvedOnAnotherThreadWhileTheClientsServicesAreMade_DoesNotDeadlockWithAServiceThatInjectsIt(bool hostStartMakesTheClient)
    {
        await using MuxServer server = await StartHubServerAsync();
        var gate = new ConstructionGate();
        await using ServiceProvider provider = BuildGatedClient<CallbackThatInjectsTheHub>(server, gate);

        // The first thread makes the client (the host's start, or a resolve of MuxClient) and
        // stops in the callback's dependency, before DI resolves the callback's proxy.
        Task<MuxClient> first = TestHost.RunOnOwnThread(() =>
        {
            if (hostStartMakesTheClient)
            {
                provider.GetServices<Microsoft.Extensions.Hosting.IHostedService>().Single().StartAsync(default).GetAwaiter().GetResult();
            }

            return provider.GetRequiredService<MuxClient>();
        });
        Assert.True(gate.Entered.Wait(TestHost.Patience), "the client's services are being made");

        // Meanwhile another thread resolves that proxy, taking DI's lock on it; it finishes, or
        // blocks waiting for the first thread (the old code: on the holder's lock, or on DI's
        // lock on MuxClient).
        Thread secondThread = null!;
        Task<IHostingHub> second = TestHost.RunOnOwnThread(() => provider.GetRequiredService<IHostingHub>(), t => secondThread = t);
        await TestHost.WaitUntilAsync(() => second.IsCompleted || (secondThread.ThreadState & ThreadState.WaitSleepJoin) != 0, "the second resolve finishes or waits");

        // The first goes on and needs the proxy the second holds. The old code deadlocked here,
        // both threads waiting for each other for good.
        gate.Release.Set();
        MuxClient client = await first.WaitAsync(TestHost.Patience);
        IHostingHub hub = await second.WaitAsync(TestHost.Patience);

        // One whole client: the callback was added and answers the server's call back.
        Assert.Same(client, provider.GetRequiredService<MuxClient>());
        Assert.Same(hub, provider.GetRequiredService<CallbackThatInjectsTheHub>().Hub);
        Assert.Equal("the client said: pong to ping", await hub.AskClient("ping").WaitAsync(TestHost.Patience));
    }

    [Fact]
    public async Task ACallMadeOnAnotherThreadWhileTheClientsServicesAreMade_FindsThemMissing_AndLaterCallsFindThem()
    {
        await using MuxServer server = await StartHubServerAsync(enableDetailedErrors: true);
        var gate = new ConstructionGate();
        await using ServiceProvider provider = BuildGatedClient<GatedCallback>(server, gate);

        // One thread makes the client and stops while its callback is made.
        Task<MuxClient> first = TestHost.RunOnOwnThread(() => provider.GetRequiredService<MuxClient>());
        Assert.True(gate.Entered.Wait(TestHost.Patience), "the client's services are being made");

        // Another gets the client at once (waiting for its services could deadlock, see
        // MuxClientHolder), and its call reaches the server, which calls the callback back: the
        // window AddService documents. It fails, at once and saying why; it does not hang.
        IHostingHub hub = await TestHost.RunOnOwnThread(() => provider.GetRequiredService<IHostingHub>()).WaitAsync(TestHost.Patience);
        var early = await Assert.ThrowsAsync<MuxRemoteException>(() => hub.AskClient("early").WaitAsync(TestHost.Patience));
        Assert.Contains("does not serve", early.Message, StringComparison.Ordinal);

        gate.Release.Set();
        await first.WaitAsync(TestHost.Patience);
        Assert.Equal("the client said: pong to later", await hub.AskClient("later").WaitAsync(TestHost.Patience));
    }

    [Theory]
    [InlineData(true)]
    [InlineData(false)]
    public async Task AProxyResolvedWithoutAHost_ClosesItsClientsConnection_WhenTheProviderIsDisposed(bool disposeAsynchronously)
    {
        await using MuxServer server = await StartHubServerAsync();
        var services = new ServiceCollection();
        services.AddSingleton<InstanceTracker>();
        services.AddMuxClient(o => o.EndPoint = server.LocalEndPoint)
            .AddProxy<IHostingHub>()
            .AddService<IHostingCallback, HostingCallback>();
        ServiceProvider provider = services.BuildServiceProvider();

        // Proxies take the client from its holder, not from DI's MuxClient singleton, so the
        // holder is what DI disposes.
        Assert.Equal("the client said: pong to ping (tracker resolved)", await provider.GetRequiredService<IHostingHub>().AskClient("ping").WaitAsync(TestHost.Patience));
        Assert.Equal(1, server.ActiveConnections);
        if (disposeAsynchronously)
        {
            await provider.DisposeAsync();
        }
        else
        {
            provider.Dispose();
        }

        await TestHost.WaitUntilAsync(() => server.ActiveConnections == 0, "the client's connection closes");
    }

    [Theory]
    [InlineData(true)]
    [InlineData(false)]
    public async Task AProviderDisposedWithTheClientOpen_ClosesItBeforeDisposingTheServiceItServes(bool disposeAsynchronously)
    {
        await using MuxServer server = await StartHubServerAsync();
        var services = new ServiceCollection();
        services.AddMuxClient(o => o.EndPoint = server.LocalEndPoint)
            .AddProxy<IHostingHub>()
            .AddService<IHostingCallback, CallbackDisposedAtAGate>();
        ServiceProvider provider = services.BuildServiceProvider();
        // Not MuxClient: DI disposes what it made, and a MuxClient resolved from it would be
        // disposed first, as made last, which hides the order of the rest.
        IHostingHub hub = provider.GetRequiredService<IHostingHub>();
        var callback = provider.GetRequiredService<CallbackDisposedAtAGate>();
        Assert.Equal("the client said: pong to ping", await hub.AskClient("ping").WaitAsync(TestHost.Patience));

        // Disposed without a host, so without a stop first; the callback's disposal waits at its
        // gate, so whichever of the two DI disposes first stays so while the server calls.
        Task disposing = disposeAsynchronously
            ? provider.DisposeAsync().AsTask()
            : TestHost.RunOnOwnThread(() =>
            {
                provider.Dispose();
                return true;
            });
        await TestHost.WaitUntilAsync(() => callback.DisposeStarted || server.ActiveConnections == 0, "the provider disposes the callback or closes the client");
        Exception? late = await Record.ExceptionAsync(() => hub.AskClient("late").WaitAsync(TestHost.Patience));
        callback.Gate.SetResult();
        await disposing.WaitAsync(TestHost.Patience);

        // The old code disposed the callback first (DI disposes in the reverse order it made
        // things, and the client's holder was made before the callback), with the client still
        // connected: the server's call reached the disposed callback, and was answered.
        Assert.Equal(0, callback.CallsAfterDispose);
        Assert.IsType<MuxConnectionException>(late);
        Assert.True(callback.DisposeStarted);
    }

    [Fact]
    public void AddingAServiceAgainWithAnotherImplementation_Throws_AsTheServersBuilderDoes()
    {
        MuxClientBuilder builder = new ServiceCollection().AddMuxClient().AddService<IHostingCallback, HostingCallback>();

        // The old code dropped the second silently: the server's calls went to the first.
        var error = Assert.Throws<InvalidOperationException>(() => builder.AddService<IHostingCallback, FailingCallback>());
        Assert.Contains(typeof(IHostingCallback).FullName!, error.Message, StringComparison.Ordinal);
        Assert.Contains(typeof(HostingCallback).FullName!, error.Message, StringComparison.Ordinal);
        Assert.Contains(typeof(FailingCallback).FullName!, error.Message, StringComparison.Ordinal);
    }

    [MuxService]
    public interface IHostingHub
    {
        Task<string> AskClient(string question, MuxCallContext? context = null);
    }

    [MuxService]
    public interface IHostingCallback
    {
        Task<string> Answer(string question);
    }

    /// <summary>A provider whose client (of <paramref name="server"/>, with the hub's proxy) serves
    /// <typeparamref name="TCallback"/>, made after a dependency that waits at <paramref name="gate"/>.</summary>
    private static ServiceProvider BuildGatedClient<TCallback>(MuxServer server, ConstructionGate gate)
        where TCallback : class, IHostingCallback
    {
        var services = new ServiceCollection();
        services.AddSingleton(gate);
        services.AddSingleton<GatedDependency>();
        services.AddMuxClient(o => o.EndPoint = server.LocalEndPoint)
            .AddProxy<IHostingHub>()
            .AddService<IHostingCallback, TCallback>();
        return services.BuildServiceProvider();
    }

    /// <summary>A server on a loopback port that serves <see cref="HostingHub"/>, started.</summary>
    private static async Task<MuxServer> StartHubServerAsync(bool enableDetailedErrors = false)
    {
        var server = new MuxServer(new MuxServerOptions { EndPoint = new IPEndPoint(IPAddress.Loopback, 0), EnableDetailedErrors = enableDetailedErrors });
        server.AddService<IHostingHub>(new HostingHub());
        await server.StartAsync().WaitAsync(TestHost.Patience);
        return server;
    }

    public sealed class HostingHub : IHostingHub
    {
        public async Task<string> AskClient(string question, MuxCallContext? context = null) =>
            "the client said: " + await context!.GetClientProxy<IHostingCallback>().Answer(question);
    }

    /// <summary>Takes a DI dependency, to show the implementation comes from the container.</summary>
    public sealed class HostingCallback(InstanceTracker tracker) : IHostingCallback
    {
        public Task<string> Answer(string question) => Task.FromResult($"pong to {question} ({(tracker is null ? "no tracker" : "tracker resolved")})");
    }

    public sealed class CallbackBrokeException(string message) : Exception(message);

    /// <summary>Makes <see cref="FailingCallback"/> fail the first time only.</summary>
    public sealed class FailOnce
    {
        public int Attempts;
    }

    public sealed class FailingCallback : IHostingCallback
    {
        public FailingCallback(FailOnce failOnce)
        {
            if (Interlocked.Increment(ref failOnce.Attempts) == 1)
            {
                throw new CallbackBrokeException("not ready yet");
            }
        }

        public Task<string> Answer(string question) => Task.FromResult($"fine to {question}");
    }

    /// <summary>Holds up <see cref="CallbackThatInjectsTheHub"/>'s construction until the test lets it go.</summary>
    public sealed class ConstructionGate
    {
        public ManualResetEventSlim Entered { get; } = new();

        public ManualResetEventSlim Release { get; } = new();
    }

    /// <summary>Made before the callback's proxy is resolved (DI resolves parameters in order);
    /// waits at the gate.</summary>
    public sealed class GatedDependency
    {
        public GatedDependency(ConstructionGate gate)
        {
            gate.Entered.Set();
            if (!gate.Release.Wait(TestHost.Patience))
            {
                throw new TimeoutException("The test did not open the gate.");
            }
        }
    }

    /// <summary>Injects the client's proxy, as the docs allow, after a dependency that waits.</summary>
    public sealed class CallbackThatInjectsTheHub(GatedDependency gated, IHostingHub hub) : IHostingCallback
    {
        public IHostingHub Hub { get; } = hub;

        public Task<string> Answer(string question) => Task.FromResult($"pong to {question}{(gated is null ? "?" : string.Empty)}");
    }

    /// <summary>Counts the calls that reach it once its disposal has started, which waits at
    /// <see cref="Gate"/>.</summary>
    public sealed class CallbackDisposedAtAGate : IHostingCallback, IAsyncDisposable, IDisposable
    {
        private volatile bool _disposeStarted;
        private int _callsAfterDispose;

        public TaskCompletionSource Gate { get; } = new(TaskCreationOptions.RunContinuationsAsynchronously);

        public bool DisposeStarted => _disposeStarted;

        public int CallsAfterDispose => Volatile.Read(ref _callsAfterDispose);

        public Task<string> Answer(string question)
        {
            if (_disposeStarted)
            {
                Interlocked.Increment(ref _callsAfterDispose);
            }

            return Task.FromResult($"pong to {question}");
        }

        public async ValueTask DisposeAsync()
        {
            _disposeStarted = true;
            await Gate.Task.WaitAsync(TestHost.Patience);
        }

        public void Dispose()
        {
            _disposeStarted = true;
            Gate.Task.Wait(TestHost.Patience);
        }
    }

    /// <summary>A callback whose construction waits at the gate.</summary>
    public sealed class GatedCallback(GatedDependency gated) : IHostingCallback
    {
        public Task<string> Answer(string question) => Task.FromResult($"pong to {question}{(gated is null ? "?" : string.Empty)}");
    }

    /// <summary>Takes the client (through its proxy) as it is being created, then fails.</summary>
    public sealed class CallbackThatInjectsAProxyAndFails : IHostingCallback
    {
        public CallbackThatInjectsAProxyAndFails(IHostingHub hub)
        {
            ArgumentNullException.ThrowIfNull(hub);
            throw new CallbackBrokeException("no callback today");
        }

        public Task<string> Answer(string question) => Task.FromResult(question);
    }
}
