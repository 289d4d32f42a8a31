using Mux.Tests.Infrastructure;

namespace Mux.Tests.Fragments;

/// <summary>Streaming calls whose Request goes in fragments: none of the call's stream frames may
/// reach the server before the Request's last fragment, whatever the writer's round robin does.</summary>
public class FragmentedStreamRequestTests
{
    private const int HeaderSize = 200 * 1024; // Four fragments at the default 64 KiB.

    private static async IAsyncEnumerable<int> Items(int count)
    {
        for (int i = 0; i < count; i++)
        {
            yield return i; // The first hundred at once, while the Request may still be in fragments.
            if (i % 100 == 99)
            {
                await Task.Yield(); // Then now and then from another thread, as a real producer would.
            }
        }
    }

    [Theory]
    [InlineData(1000)]
    [InlineData(0)] // Only StreamEnd follows the Request.
    public async Task ClientStreaming_WithA200KiBArgument_DeliversTheArgumentWholeAndEveryItemInOrderOnce(int count)
    {
        await using TwoWayHost host = await TwoWayHost.StartAsync();
        byte[] header = BlobService.Pattern(HeaderSize);

        int[] read = await host.Streams.Collect(header, Items(count)).WaitAsync(TestHost.Patience);

        Assert.Equal(Enumerable.Range(0, count), read);
        Assert.Equal(5, await host.Proxy.Add(2, 3).AsTask().WaitAsync(TestHost.Patience));
        Assert.Equal(1, host.Server.ActiveConnections);
    }

    [Fact]
    public async Task DuplexStreaming_WithA200KiBArgument_StreamsEveryItemBackInOrderOnce()
    {
        await using TwoWayHost host = await TwoWayHost.StartAsync();
        byte[] header = BlobService.Pattern(HeaderSize);
        var received = new List<int>();

        using var timeout = new CancellationTokenSource(TestHost.Patience);
        await foreach (int item in host.Streams.Negate(header, Items(1000), timeout.Token))
        {
            received.Add(item);
        }

        Assert.Equal(Enumerable.Range(0, 1000).Select(static i => -i), received);
        Assert.Equal(1, host.Server.ActiveConnections);
    }

    [Fact]
    public async Task ManyClientStreamsWithFragmentedArguments_AtOnce_EachDeliverTheirItemsInOrder()
    {
        // Small fragments and several calls at once: many writer turns in which items could overtake.
        var serverOptions = new MuxServerOptions { FragmentSize = 1024 };
        var clientOptions = new MuxClientOptions { FragmentSize = 1024 };
        await using TwoWayHost host = await TwoWayHost.StartAsync(serverOptions, clientOptions);

        Task<int[]>[] calls = Enumerable.Range(1, 8).Select(i => host.Streams.Collect(BlobService.Pattern(i * 5000), Items(200 + i))).ToArray();
        int[][] results = await Task.WhenAll(calls).WaitAsync(TestHost.Patience);

        for (int i = 0; i < results.Length; i++)
        {
            Assert.Equal(Enumerable.Range(0, 200 + i + 1), results[i]);
        }
    }
}
