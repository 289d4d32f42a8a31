using Mux.Tests.Infrastructure;

namespace Mux.Tests.Streaming;

/// <summary>Server streams that move a great deal: a million small items, and a thousand items of
/// 1 MiB (1 GiB over loopback TCP). They run in the serial collection: alone, they neither starve
/// timing-sensitive neighbours of CPU and memory nor wait on them past their patience.</summary>
[Collection(SerialCollection.Name)]
public sealed class LargeStreamTests
{
    private static readonly TimeSpan Patience = TestHost.Patience;

    // The window a client grants each stream by default: the most items a server's producer may
    // have sent beyond what the consumer has read.
    private static readonly int DefaultWindow = new MuxClientOptions().StreamWindow;

    [Fact]
    public async Task ServerStream_OfOneMillionSmallItems_ArrivesCompleteAndInOrder_EndsOnce_AndTheProducerNeverRunsMoreThanAWindowAhead()
    {
        await using StreamingTests.Host host = await StreamingTests.Host.StartAsync(tcp: true);
        using var timeout = new CancellationTokenSource(Patience * 4);

        long read = 0;
        long mostAhead = 0;
        await foreach (int value in host.Proxy.Range(7, 1_000_000).WithCancellation(timeout.Token))
        {
            if (value != 7 + read)
            {
                Assert.Fail($"Item {read} is {value}, not {7 + read}.");
            }

            read++;

            // The producer counts an item before it yields it, and it can only have sent what the
            // consumer granted: the window plus what was read so far. One more may wait for credit.
            mostAhead = Math.Max(mostAhead, host.Service.Produced - read);
        }

        await AssertReadAllWithinTheWindowAsync(host, 1_000_000, read, mostAhead);
    }

    [Fact]
    public async Task ServerStream_OfOneThousandItemsOfOneMiB_ArrivesCompleteAndInOrder_EndsOnce_AndTheProducerNeverRunsMoreThanAWindowAhead()
    {
        await using StreamingTests.Host host = await StreamingTests.Host.StartAsync(tcp: true);
        using var timeout = new CancellationTokenSource(Patience * 4);

        int index = 0;
        long mostAhead = 0;
        await foreach (byte[] blob in host.Proxy.Blobs(1000, 1024 * 1024).WithCancellation(timeout.Token))
        {
            Assert.Equal(1024 * 1024, blob.Length);
            if (!StreamService.IsBlob(blob, index))
            {
                Assert.Fail($"Item {index} does not hold what the server put in item {index}.");
            }

            index++;
            mostAhead = Math.Max(mostAhead, host.Service.Produced - index);
        }

        await AssertReadAllWithinTheWindowAsync(host, 1000, index, mostAhead);
    }

    /// <summary>The consumer read all <paramref name="count"/> items, the producer was never more
    /// than a window (plus the item waiting for credit) ahead, and it made exactly that many and
    /// ended once.</summary>
    private static async Task AssertReadAllWithinTheWindowAsync(StreamingTests.Host host, long count, long read, long mostAhead)
    {
        Assert.Equal(count, read);
        Assert.InRange(mostAhead, 0, DefaultWindow + 1);
        await Hosts.WaitUntilAsync(() => host.Service.ProducersEnded == 1, "the server's producer to end");
        Assert.Equal(count, host.Service.Produced);
        Assert.Equal(1, host.Service.ProducersEnded);
    }
}
