using Mux.Tests.Infrastructure;

namespace Mux.Tests.Streaming;

/// <summary>A streaming method whose implementation returns no stream at all.</summary>
[MuxService]
public interface INullStream
{
    IAsyncEnumerable<int> Nothing();
}

public sealed class NullStream : INullStream
{
    public IAsyncEnumerable<int> Nothing() => null!;
}

/// <summary>Streams at their edges: no items at all, and items in fragments between small ones,
/// in both directions at once.</summary>
public sealed class StreamEdgeTests
{
    private static readonly TimeSpan Patience = TestHost.Patience;

    private static async IAsyncEnumerable<T> Nothing<T>()
    {
        await Task.Yield();
        yield break;
    }

    [Theory]
    [InlineData(false)]
    [InlineData(true)]
    public async Task StreamsOfNoItems_EndAtOnce_InEveryDirection_AndTheConnectionGoesOn(bool tcp)
    {
        await using StreamingTests.Host host = await StreamingTests.Host.StartAsync(tcp);
        IStreamService proxy = host.Proxy;

        Assert.Empty(await proxy.Range(7, 0).ToListAsync().AsTask().WaitAsync(Patience));
        Assert.Equal(0, await proxy.Sum(Nothing<int>()).WaitAsync(Patience));
        Assert.Empty(await proxy.Echo("> ", Nothing<string>()).ToListAsync().AsTask().WaitAsync(Patience));

        // Each ended once, cleanly: the next call on the connection sees nothing of them.
        Assert.Equal([1, 2, 3], await proxy.Range(1, 3).ToListAsync().AsTask().WaitAsync(Patience));
    }

    [Theory]
    [InlineData(false)]
    [InlineData(true)]
    public async Task LargeItemsInFragments_BetweenSmallOnes_ArriveWholeAndInOrder_BothWays(bool tcp)
    {
        await using StreamingTests.Host host = await StreamingTests.Host.StartAsync(tcp);

        // Lines of 200,000 chars (several 64 KiB fragments each way) between one-char lines.
        string[] lines = [.. Enumerable.Range(0, 40).Select(i => i % 2 == 0 ? new string((char)('a' + (i % 26)), 200_000) : i.ToString())];
        List<string> echoed = await host.Proxy.Echo(">", lines.ToAsyncEnumerable()).ToListAsync().AsTask().WaitAsync(Patience);

        Assert.Equal(lines.Select(line => ">" + line), echoed);
    }

    [Fact]
    public async Task AnItemOverThePeersFrameSize_FailsOnlyItsOwnCall_AfterTheItemsBeforeIt_BothWays()
    {
        // Stream items are never sent in fragments: one over the peer's MaxFrameSize fails its stream.
        await using StreamingTests.Host host = await StreamingTests.Host.StartAsync(
            serverOptions: new MuxServerOptions { EnableDetailedErrors = true, MaxFrameSize = 64 * 1024 },
            clientOptions: new MuxClientOptions { MaxFrameSize = 64 * 1024 });

        // The server's producer: the client reads the items that fit, then the handler's failure.
        await using (IAsyncEnumerator<byte[]> blobs = host.Proxy.Blobs(2, 100_000).GetAsyncEnumerator())
        {
            var remote = await Assert.ThrowsAsync<MuxRemoteException>(() => blobs.MoveNextAsync().AsTask()).WaitAsync(Patience);
            Assert.Equal(MuxStatusCode.FrameTooLarge, remote.StatusCode);
        }

        // The client's producer: its call fails with why, after the echoes of the lines before it
        // (written one at a time: a producer's failure ends the consumer after what is buffered).
        var lines = System.Threading.Channels.Channel.CreateUnbounded<string>();
        await using (IAsyncEnumerator<string> echoes = host.Proxy.Echo(">", lines.Reader.ReadAllAsync()).GetAsyncEnumerator())
        {
            foreach (string line in new[] { "one", "two" })
            {
                await lines.Writer.WriteAsync(line);
                Assert.True(await echoes.MoveNextAsync().AsTask().WaitAsync(Patience));
                Assert.Equal(">" + line, echoes.Current);
            }

            await lines.Writer.WriteAsync(new string('x', 100_000));
            var tooLarge = await Assert.ThrowsAnyAsync<InvalidOperationException>(() => echoes.MoveNextAsync().AsTask()).WaitAsync(Patience);
            Assert.Contains("maximum frame size", tooLarge.Message, StringComparison.Ordinal);
        }

        Assert.Equal([1, 2, 3], await host.Proxy.Range(1, 3).ToListAsync().AsTask().WaitAsync(Patience));
        Assert.Equal(6, await host.Proxy.Sum(new[] { 1, 2, 3 }.ToAsyncEnumerable()).WaitAsync(Patience));
    }

    [Fact]
    public async Task AHandlerThatReturnsANullStream_FailsOnlyItsCall_WithWhy()
    {
        var server = new MuxServer(new MuxServerOptions { EnableDetailedErrors = true });
        server.AddService<INullStream>(new NullStream());
        server.AddService<IStreamService>(new StreamService());
        await using (server)
        {
            await using MuxClient client = await server.ConnectInMemoryAsync().WaitAsync(Patience);
            var ex = await Assert.ThrowsAsync<MuxRemoteException>(async () =>
            {
                await foreach (int item in client.CreateProxy<INullStream>().Nothing())
                {
                    Assert.Fail($"A null stream yielded {item}.");
                }
            }).WaitAsync(Patience);
            Assert.Equal(MuxStatusCode.HandlerFailed, ex.StatusCode);
            Assert.Contains("returned a null IAsyncEnumerable", ex.Message, StringComparison.Ordinal);
            Assert.Equal([1, 2, 3], await client.CreateProxy<IStreamService>().Range(1, 3).ToListAsync().AsTask().WaitAsync(Patience));
        }
    }
}
