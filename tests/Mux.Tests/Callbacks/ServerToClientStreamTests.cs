using Mux.Protocol;
using Mux.Tests.Infrastructure;
using Mux.Tests.Protocol;
using static Mux.Tests.Protocol.ProtocolTestHelpers;

namespace Mux.Tests.Callbacks;

/// <summary>Streams on the calls a server makes to its client: the proxy a server gets for its
/// client (MuxCallContext.GetClientProxy, MuxRemoteClient.CreateProxy) streams both ways, through
/// the same caller and serving roles as calls the other way.</summary>
public class ServerToClientStreamTests
{
    private static async IAsyncEnumerable<int> Values(int count)
    {
        for (int i = 1; i <= count; i++)
        {
            await Task.Yield();
            yield return i;
        }
    }

    [Theory]
    [InlineData(TransportKind.InMemory)]
    [InlineData(TransportKind.Tcp)]
    public async Task AServerHandler_ReadsTheStreamItsClientReturns_InOrder(TransportKind kind)
    {
        await using CallbackHost host = await CallbackHost.StartAsync(kind);
        MuxClient client = await host.ConnectAsync(null);
        client.AddService<IClientCounter>(new ClientCounter());

        // 300 items: more than the 64-item window, so credit flows back from the server.
        int[] items = await client.CreateProxy<ICallbackHub>().CountOnClient(300, int.MaxValue).WaitAsync(TestHost.Patience);

        Assert.Equal(Enumerable.Range(1, 300), items);
        Assert.Equal(0, client.PendingCalls);
    }

    [Fact]
    public async Task AServerHandlerThatStopsReadingEarly_StopsTheClientsProducer_AndTheConnectionGoesOn()
    {
        await using CallbackHost host = await CallbackHost.StartAsync(TransportKind.InMemory);
        MuxClient client = await host.ConnectAsync(new ClientSide(3));
        var counter = new ClientCounter();
        client.AddService<IClientCounter>(counter);
        ICallbackHub hub = client.CreateProxy<ICallbackHub>();

        int[] firstThree = await hub.CountOnClient(1_000_000, 3).WaitAsync(TestHost.Patience);
        Assert.Equal(new[] { 1, 2, 3 }, firstThree);

        await counter.CountCancelled.WaitAsync(TestHost.Patience);
        Assert.Equal(1003, await hub.SumOfClientAnswers(1).WaitAsync(TestHost.Patience));
    }

    [Fact]
    public async Task BothInvokers_RefuseANullStream_WhenTheCallIsMade_WhateverTheCallReturns()
    {
        await using CallbackHost host = await CallbackHost.StartAsync(TransportKind.InMemory);
        (MuxClient client, MuxRemoteClient remote) = await host.ConnectAndRegisterAsync(null);

        foreach (IMuxCallInvoker invoker in new IMuxCallInvoker[] { client, remote })
        {
            // At the call, not in the task or enumerator it returns, for the void caller stream too.
            Assert.Equal("items", Assert.Throws<ArgumentNullException>(() => invoker.InvokeDuplexStream<int, int, int>(1, 0, null!, default)).ParamName);
            Assert.Equal("items", Assert.Throws<ArgumentNullException>(() => invoker.InvokeClientStreamAsync<int, int, int>(1, 0, null!, default)).ParamName);
            Assert.Equal("items", Assert.Throws<ArgumentNullException>(() => invoker.InvokeClientStreamAsync<int, int>(1, 0, null!, default)).ParamName);
        }

        Assert.Equal(0, client.PendingCalls);
    }

    [Theory]
    [InlineData(TransportKind.InMemory)]
    [InlineData(TransportKind.Tcp)]
    public async Task AServer_StreamsItemsToItsClient_AndGetsItsAnswer(TransportKind kind)
    {
        await using CallbackHost host = await CallbackHost.StartAsync(kind);
        (MuxClient client, MuxRemoteClient remote) = await host.ConnectAndRegisterAsync(null);
        client.AddService<IClientCounter>(new ClientCounter());

        int sum = await remote.CreateProxy<IClientCounter>().Sum(Values(1000)).WaitAsync(TestHost.Patience);

        Assert.Equal(500_500, sum);
    }

    [Theory]
    [InlineData(TransportKind.InMemory)]
    [InlineData(TransportKind.Tcp)]
    public async Task AServer_StreamsBothWaysWithItsClient(TransportKind kind)
    {
        await using CallbackHost host = await CallbackHost.StartAsync(kind);
        (MuxClient client, MuxRemoteClient remote) = await host.ConnectAndRegisterAsync(null);
        client.AddService<IClientCounter>(new ClientCounter());

        var scaled = new List<int>();
        await foreach (int item in remote.CreateProxy<IClientCounter>().Scale(3, Values(200)).WithCancellation(new CancellationTokenSource(TestHost.Patience).Token))
        {
            scaled.Add(item);
        }

        Assert.Equal(Enumerable.Range(1, 200).Select(i => i * 3), scaled);
    }

    [Fact]
    public async Task AStreamFromTheClient_WhenItsConnectionIsLost_EndsOnceWithMuxConnectionException()
    {
        await using CallbackHost host = await CallbackHost.StartAsync(TransportKind.Tcp);
        (MuxClient client, MuxRemoteClient remote) = await host.ConnectAndRegisterAsync(null, new MuxClientOptions { AutoReconnect = false });
        client.AddService<IClientCounter>(new ClientCounter());

        int read = 0;
        var failures = new List<Exception>();
        try
        {
            await foreach (int item in remote.CreateProxy<IClientCounter>().Count(int.MaxValue).WithCancellation(new CancellationTokenSource(TestHost.Patience).Token))
            {
                Assert.Equal(++read, item);
                if (read == 10)
                {
                    await client.DisposeAsync();
                }
            }
        }
        catch (Exception ex)
        {
            failures.Add(ex);
        }

        Exception failure = Assert.Single(failures);
        Assert.IsType<MuxConnectionException>(failure);
        Assert.False(remote.IsConnected);
    }

    [Fact]
    public async Task AClientThatDoesNotAnnounceServerCallStreams_IsNeverSentAStreamingCall()
    {
        await using CallbackHost host = await CallbackHost.StartAsync(TransportKind.Tcp);
        await using RawMuxPeer oldClient = await RawMuxPeer.ConnectAsync(host.Server.LocalEndPoint!);
        var hello = new HandshakeSettings(ProtocolConstants.Version, 4 * 1024 * 1024, int.MaxValue, null) { ServerCallStreams = false };
        await oldClient.SendAsync(WriteHelloFrame(FrameType.Hello, hello));
        Assert.Equal(FrameType.HelloAck, (await oldClient.ExpectFrameAsync()).Type);
        await oldClient.SendAsync(WriteFrame(FrameType.Request, 1, MuxMethodId.Compute("Mux.Tests.Callbacks.ICallbackHub.Register"), new RawBody([0x90])));
        Assert.Equal(FrameType.Response, (await oldClient.ExpectFrameAsync()).Type);
        Assert.True(host.Hub.Registered.TryDequeue(out MuxRemoteClient? remote));

        var ex = await Assert.ThrowsAsync<NotSupportedException>(() => remote!.CreateProxy<IClientCounter>().Sum(Values(3)));
        Assert.Contains("did not announce serverCallStreams", ex.Message, StringComparison.Ordinal);

        // Nothing of the call went out: the next frame the client sees answers its Ping.
        await oldClient.SendAsync(WriteRawFrame(FrameType.Ping, 0, new byte[ProtocolConstants.PingPayloadSize]));
        Assert.Equal(FrameType.Pong, (await oldClient.ExpectFrameAsync()).Type);
        Assert.True(remote!.IsConnected);
    }
}
