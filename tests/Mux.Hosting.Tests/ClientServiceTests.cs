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
}
