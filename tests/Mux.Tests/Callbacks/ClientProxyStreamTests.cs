using Mux.Tests.Infrastructure;

namespace Mux.Tests.Callbacks;

/// <summary>Streams are not supported on calls from a server to its client: a proxy from
/// MuxCallContext.GetClientProxy (or MuxRemoteClient.CreateProxy) says so and sends nothing.</summary>
public class ClientProxyStreamTests
{
    private const string Expected = "IAsyncEnumerable streams are not supported on calls from a server to its client.";

    private static async IAsyncEnumerable<int> Values()
    {
        await Task.Yield();
        yield return 1;
    }

    [Fact]
    public async Task AStreamingMethodOnAProxyFromGetClientProxy_ThrowsNotSupportedException_AndTheConnectionGoesOn()
    {
        await using CallbackHost host = await CallbackHost.StartAsync(TransportKind.InMemory);
        MuxClient client = await host.ConnectAsync(new ClientSide(3));
        ICallbackHub hub = client.CreateProxy<ICallbackHub>();

        string outcome = await hub.StreamFromClient().WaitAsync(TestHost.Patience);

        Assert.Equal("System.NotSupportedException: " + Expected, outcome);
        Assert.Equal(1003, await hub.SumOfClientAnswers(1).WaitAsync(TestHost.Patience));
        Assert.True(client.IsConnected);
    }

    [Fact]
    public async Task AClientStreamingMethodOnAProxyToTheClient_ThrowsNotSupportedException()
    {
        await using CallbackHost host = await CallbackHost.StartAsync(TransportKind.InMemory);
        (MuxClient _, MuxRemoteClient remote) = await host.ConnectAndRegisterAsync(new ClientSide(3));
        IClientCounter counter = remote.CreateProxy<IClientCounter>();

        var ex = await Assert.ThrowsAsync<NotSupportedException>(() => counter.Sum(Values()));

        Assert.Equal(Expected, ex.Message);
        Assert.Equal("fast a from 3", await remote.CreateProxy<IClientSide>().Fast("a").AsTask().WaitAsync(TestHost.Patience));
    }
}
