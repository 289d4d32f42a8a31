using System.Net;
using Microsoft.Extensions.DependencyInjection;

namespace Mux.Hosting.Tests;

/// <summary>A service the hosted client serves to its server (MuxClientBuilder.AddService).</summary>
public sealed class ClientServiceTests
{
    [Fact]
    public async Task AServiceAddedToTheHostedClient_IsResolvedFromDI_AndAnswersTheServersCallsBack()
    {
        await using var server = new MuxServer(new MuxServerOptions { EndPoint = new IPEndPoint(IPAddress.Loopback, 0) });
        server.AddService<IHostingHub>(new HostingHub());
        await server.StartAsync().WaitAsync(TestHost.Patience);

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
        await using var server = new MuxServer(new MuxServerOptions { EndPoint = new IPEndPoint(IPAddress.Loopback, 0) });
        server.AddService<IHostingHub>(new HostingHub());
        await server.StartAsync().WaitAsync(TestHost.Patience);
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
        await using var server = new MuxServer(new MuxServerOptions { EndPoint = new IPEndPoint(IPAddress.Loopback, 0) });
        server.AddService<IHostingHub>(new HostingHub());
        await server.StartAsync().WaitAsync(TestHost.Patience);
        var services = new ServiceCollection();
        services.AddMuxClient(o => o.EndPoint = server.LocalEndPoint)
            .AddProxy<IHostingHub>()
            .AddService<IHostingCallback, CallbackThatInjectsAProxyAndFails>();
        await using ServiceProvider provider = services.BuildServiceProvider();

        Assert.Equal("no callback today", Assert.Throws<CallbackBrokeException>(() => provider.GetRequiredService<IHostingHub>()).Message);

        // DI keeps the client (and the proxy) the failed service was given: a new client would not
        // be theirs, so none is made. That one is closed (the old code left it connected, and
        // the host's start went on with it).
        MuxClient handedOut = provider.GetRequiredService<MuxClient>();
        await handedOut.Completion.WaitAsync(TestHost.Patience);
        Assert.Equal(MuxClientState.Closed, handedOut.State);
        await TestHost.WaitUntilAsync(() => server.ActiveConnections == 0, "no connection stays open");
        var again = await Assert.ThrowsAsync<InvalidOperationException>(() => provider.GetServices<Microsoft.Extensions.Hosting.IHostedService>().Single().StartAsync(default).WaitAsync(TestHost.Patience));
        Assert.IsType<CallbackBrokeException>(again.InnerException);
        Assert.Contains("no callback today", again.Message, StringComparison.Ordinal);
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
