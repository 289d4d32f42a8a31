using Mux.Tests.Infrastructure;

namespace Mux.Tests.Fragments;

/// <summary>Messages larger than one fragment, end to end over loopback TCP. The 16 and 100 MiB
/// echoes under load are in <see cref="LargeMessageUnderLoadTests"/>, in the serial collection.</summary>
public class LargeMessageTests
{
    private const int MiB = 1024 * 1024;

    [Fact]
    public async Task ARequestOverTheServersMaxMessageSize_FailsBeforeItIsSent_AndTheNextCallOnTheConnectionWorks()
    {
        await using BlobHost host = await BlobHost.StartAsync(new MuxServerOptions { MaxMessageSize = MiB });

        var ex = await Assert.ThrowsAnyAsync<InvalidOperationException>(() => host.Proxy.Echo(new byte[2 * MiB]).WaitAsync(TestHost.Patience));

        Assert.Contains("MaxMessageSize of 1048576 bytes (1 MiB)", ex.Message, StringComparison.Ordinal);
        long size = long.Parse(System.Text.RegularExpressions.Regex.Match(ex.Message, @"is (\d+) bytes").Groups[1].Value, System.Globalization.CultureInfo.InvariantCulture);
        Assert.InRange(size, 2 * MiB, 2 * MiB + 1024); // The data, its MessagePack headers and the method id.
        Assert.Equal(0, host.Service.Echoes);
        Assert.Equal(5, await host.Proxy.Add(2, 3).AsTask().WaitAsync(TestHost.Patience));
        byte[] fits = BlobService.Pattern(MiB - 64);
        Assert.Equal(fits, await host.Proxy.Echo(fits).WaitAsync(TestHost.Patience));
        Assert.Equal(1, host.Server.ActiveConnections);
    }

    [Fact]
    public async Task AResponseOverTheClientsMaxMessageSize_FailsThatCallWithMessageTooLarge_AndTheConnectionStaysUp()
    {
        await using BlobHost host = await BlobHost.StartAsync(clientOptions: new MuxClientOptions { MaxMessageSize = MiB });

        var ex = await Assert.ThrowsAsync<MuxRemoteException>(() => host.Proxy.Make(2 * MiB).WaitAsync(TestHost.Patience));

        Assert.Equal(MuxStatusCode.MessageTooLarge, ex.StatusCode);
        Assert.Contains("IBlobService.Make", ex.Message, StringComparison.Ordinal);
        Assert.Contains("MaxMessageSize of 1048576 bytes (1 MiB)", ex.Message, StringComparison.Ordinal);
        Assert.Equal(5, await host.Proxy.Add(2, 3).AsTask().WaitAsync(TestHost.Patience));
        Assert.Equal(BlobService.Pattern(MiB - 64), await host.Proxy.Make(MiB - 64).WaitAsync(TestHost.Patience));
        Assert.True(host.Client.IsConnected);
    }

    [Theory]
    [InlineData(0)]
    [InlineData(1)]
    [InlineData(1015)]
    [InlineData(1016)] // Exactly the fragment size once the method id and MessagePack headers are added.
    [InlineData(1017)]
    [InlineData(2040)]
    [InlineData(2041)]
    [InlineData(100_000)]
    public async Task PayloadsAroundTheFragmentSize_RoundTripIntact(int size)
    {
        var serverOptions = new MuxServerOptions { FragmentSize = 1024 };
        var clientOptions = new MuxClientOptions { FragmentSize = 1024 };
        await using BlobHost host = await BlobHost.StartAsync(serverOptions, clientOptions);
        byte[] data = BlobService.Pattern(size);

        Assert.Equal(data, await host.Proxy.Echo(data).WaitAsync(TestHost.Patience));
        Assert.Equal(data, await host.Proxy.Make(size).WaitAsync(TestHost.Patience));
    }

    [Fact]
    public async Task ManyLargeMessagesAtOnce_InterleaveOnOneConnection_AndEachArrivesWhole()
    {
        var serverOptions = new MuxServerOptions { FragmentSize = 4096 };
        var clientOptions = new MuxClientOptions { FragmentSize = 4096 };
        await using BlobHost host = await BlobHost.StartAsync(serverOptions, clientOptions);

        Task<byte[]>[] calls = Enumerable.Range(1, 40).Select(i => host.Proxy.Echo(BlobService.Pattern(i * 10_000))).ToArray();
        byte[][] results = await Task.WhenAll(calls).WaitAsync(TestHost.Patience);

        for (int i = 0; i < results.Length; i++)
        {
            Assert.Equal(BlobService.Pattern((i + 1) * 10_000), results[i]);
        }
    }

    [Theory]
    [InlineData(0)] // The default, 64 KiB: a frame that outgrows one segment is sent in fragments (but for a few bytes around 64 KiB).
    [InlineData(MiB)] // Raised: frames up to 1 MiB go whole, put back together from the segments they were encoded into.
    public async Task PayloadsAroundOneEncodingSegment_RoundTripIntact_AsOneFrameOrInFragments(int fragmentSize)
    {
        var serverOptions = new MuxServerOptions();
        var clientOptions = new MuxClientOptions();
        if (fragmentSize != 0)
        {
            serverOptions.FragmentSize = fragmentSize;
            clientOptions.FragmentSize = fragmentSize;
        }

        await using BlobHost host = await BlobHost.StartAsync(serverOptions, clientOptions);

        // Every size whose frame ends within 40 bytes of 64 KiB, and some frames of several segments.
        int[] sizes = [.. Enumerable.Range((64 * 1024) - 60, 80), 200_000, MiB - 100];
        foreach (int size in sizes)
        {
            byte[] data = BlobService.Pattern(size);
            Assert.Equal(data, await host.Proxy.Echo(data).WaitAsync(TestHost.Patience));
            Assert.Equal(data, await host.Proxy.Make(size).WaitAsync(TestHost.Patience));
        }

        Assert.Equal(sizes.Length, host.Service.Echoes);
    }
}
