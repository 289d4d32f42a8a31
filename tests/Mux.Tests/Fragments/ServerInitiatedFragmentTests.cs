using Mux.Tests.Infrastructure;

namespace Mux.Tests.Fragments;

/// <summary>Large messages of calls from server to client, end to end over loopback TCP: they go in
/// fragments like any other, in the server's own id space.</summary>
public class ServerInitiatedFragmentTests
{
    private const int MiB = 1024 * 1024;

    /// <summary><see cref="BlobService.Pattern"/> made different for each <paramref name="seed"/>,
    /// so a fragment delivered to the wrong message shows.</summary>
    private static byte[] Distinct(int size, int seed)
    {
        byte[] bytes = BlobService.Pattern(size);
        for (int i = 0; i < bytes.Length; i++)
        {
            bytes[i] ^= (byte)(seed * 37 + 1);
        }

        return bytes;
    }

    [Fact]
    public async Task CallsFromServerToClientWith1MiBEachWay_AndClientCallsWithTheSameIds_AllRoundTripIntact_EachRunOnce()
    {
        await using TwoWayHost host = await TwoWayHost.StartAsync();
        const int Calls = 6;

        // Both sides number their calls from 1 (the client's Register took its 1), so ids 2 to 6 are
        // in use both ways at once, each with a 1 MiB message in fragments in each direction.
        byte[][] toClient = Enumerable.Range(0, Calls).Select(i => Distinct(MiB, i)).ToArray();
        byte[][] toServer = Enumerable.Range(0, Calls).Select(i => Distinct(MiB, 100 + i)).ToArray();
        Task<byte[]>[] fromServer = toClient.Select(data => Task.Run(() => host.ClientProxy.Echo(data))).ToArray();
        Task<byte[]>[] fromClient = toServer.Select(data => Task.Run(() => host.Proxy.Echo(data))).ToArray();
        Task<byte[]> made = host.ClientProxy.Make(MiB + 7);

        byte[][] clientAnswers = await Task.WhenAll(fromServer).WaitAsync(TestHost.Patience);
        byte[][] serverAnswers = await Task.WhenAll(fromClient).WaitAsync(TestHost.Patience);

        for (int i = 0; i < Calls; i++)
        {
            Assert.True(toClient[i].AsSpan().SequenceEqual(clientAnswers[i]), $"The client's answer to the server's call {i} differs from what the server sent.");
            Assert.True(toServer[i].AsSpan().SequenceEqual(serverAnswers[i]), $"The server's answer to the client's call {i} differs from what the client sent.");
        }

        Assert.Equal(BlobService.Pattern(MiB + 7), await made.WaitAsync(TestHost.Patience));
        Assert.Equal(Calls, host.ClientService.Echoes);
        Assert.Equal(1, host.ClientService.Makes);
        Assert.Equal(Calls, host.Service.Echoes);
        Assert.True(host.Remote.IsConnected);
        Assert.Equal(1, host.Server.ActiveConnections);
    }

    [Fact]
    public async Task AnArgumentOverTheClientsMaxMessageSize_FailsTheServersCallBeforeItIsSent_AndTheNextCallWorks()
    {
        await using TwoWayHost host = await TwoWayHost.StartAsync(clientOptions: new MuxClientOptions { MaxMessageSize = MiB });

        var ex = await Assert.ThrowsAnyAsync<InvalidOperationException>(() => host.ClientProxy.Echo(new byte[2 * MiB]).WaitAsync(TestHost.Patience));

        Assert.Contains("over the peer's MaxMessageSize of 1048576 bytes (1 MiB)", ex.Message, StringComparison.Ordinal);
        Assert.Contains("MuxClientOptions.MaxMessageSize", ex.Message, StringComparison.Ordinal);
        Assert.Equal(0, host.ClientService.Echoes);
        byte[] fits = BlobService.Pattern(MiB - 64);
        Assert.Equal(fits, await host.ClientProxy.Echo(fits).WaitAsync(TestHost.Patience));
        Assert.Equal(5, await host.Proxy.Add(2, 3).AsTask().WaitAsync(TestHost.Patience));
        Assert.Equal(1, host.ClientService.Echoes);
        Assert.True(host.Remote.IsConnected);
    }

    [Fact]
    public async Task AClientResultOverTheServersMaxMessageSize_FailsTheServersCallWithMessageTooLarge_AndTheConnectionStaysUp()
    {
        await using TwoWayHost host = await TwoWayHost.StartAsync(new MuxServerOptions { MaxMessageSize = MiB });

        var ex = await Assert.ThrowsAsync<MuxRemoteException>(() => host.ClientProxy.Make(2 * MiB).WaitAsync(TestHost.Patience));

        Assert.Equal(MuxStatusCode.MessageTooLarge, ex.StatusCode);
        Assert.Contains("The response of IClientBlobs.Make was not sent", ex.Message, StringComparison.Ordinal);
        Assert.Contains("over the peer's MaxMessageSize of 1048576 bytes (1 MiB)", ex.Message, StringComparison.Ordinal);
        Assert.Contains("MuxServerOptions.MaxMessageSize", ex.Message, StringComparison.Ordinal);
        Assert.Equal(1, host.ClientService.Makes);
        Assert.Equal(BlobService.Pattern(MiB - 64), await host.ClientProxy.Make(MiB - 64).WaitAsync(TestHost.Patience));
        Assert.Equal(5, await host.Proxy.Add(2, 3).AsTask().WaitAsync(TestHost.Patience));
        Assert.True(host.Remote.IsConnected);
        Assert.Equal(1, host.Server.ActiveConnections);
    }
}
