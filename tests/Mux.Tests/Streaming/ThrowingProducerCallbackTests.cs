using System.Runtime.CompilerServices;
using Mux.Tests.Infrastructure;

namespace Mux.Tests.Streaming;

/// <summary>
/// A caller's producer (the stream a call sends) registers a callback on the token the call gives
/// it, and the callback throws when the call cancels that token at its end. The failure is the
/// producer's own: it is logged, and the call still cleans up (its streams leave the connection's
/// table, its producer is awaited) and ends as it would have, with its answer, the consumer's
/// loop, or the producer's own exception.
/// </summary>
public sealed class ThrowingProducerCallbackTests
{
    private const int CallerCancellationCallbackFailedEvent = 11;

    private static readonly TimeSpan Patience = TestHost.Patience;

    [Fact]
    public async Task ACallerStreamsCallback_ThatThrowsWhenTheCalleeAnswersEarly_LeavesTheAnswer_AndTheCallCleansUp()
    {
        var log = new CapturedLog();
        await using StreamingTests.Host host = await StreamingTests.Host.StartAsync(clientOptions: new MuxClientOptions { LoggerFactory = log });
        var producer = new Producer();

        int sum = await host.Proxy.SumFirst(3, producer.ThenWaitAsync()).AsTask().WaitAsync(Patience);

        Assert.Equal(0 + 1 + 2, sum);
        await AssertCleanedUpAsync(host, producer, log);
    }

    [Fact]
    public async Task ADuplexCallersCallback_ThatThrowsWhenTheConsumerStopsEarly_EndsTheLoopQuietly_AndTheCallCleansUp()
    {
        var log = new CapturedLog();
        await using StreamingTests.Host host = await StreamingTests.Host.StartAsync(clientOptions: new MuxClientOptions { LoggerFactory = log });
        var producer = new Producer();

        var echoed = new List<string>();
        await foreach (string line in host.Proxy.Echo("> ", producer.ThenWaitAsync(static i => $"line {i}")).WithCancellation(new CancellationTokenSource(Patience).Token))
        {
            echoed.Add(line);
            if (echoed.Count == 3)
            {
                break; // Cancels the call, and with it the producer's token.
            }
        }

        Assert.Equal(["> line 0", "> line 1", "> line 2"], echoed);
        await AssertCleanedUpAsync(host, producer, log);
    }

    [Fact]
    public async Task ACallerStreamsCallback_ThatThrowsWhenItsProducerFails_LeavesTheProducersException()
    {
        var log = new CapturedLog();
        await using StreamingTests.Host host = await StreamingTests.Host.StartAsync(clientOptions: new MuxClientOptions { LoggerFactory = log });
        var producer = new Producer();

        var error = await Assert.ThrowsAsync<InvalidOperationException>(() => host.Proxy.Sum(producer.ThenFailAsync("sensor unplugged"))).WaitAsync(Patience);

        Assert.Equal("sensor unplugged", error.Message);
        await AssertCleanedUpAsync(host, producer, log);
    }

    /// <summary>The call's streams left the table, the callback's failure was logged, the producer
    /// ended, and the connection serves on.</summary>
    private static async Task AssertCleanedUpAsync(StreamingTests.Host host, Producer producer, CapturedLog log)
    {
        Assert.Equal(0, host.Client.Connection.Outgoing.StreamCount);
        await Hosts.WaitUntilAsync(() => producer.Ended, "the producer to be disposed");
        Assert.Contains(log.Entries, entry => entry.EventId.Id == CallerCancellationCallbackFailedEvent);
        Assert.Equal(10, await host.Proxy.Sum(Values(5)).WaitAsync(Patience));
    }

    private static async IAsyncEnumerable<int> Values(int count)
    {
        for (int i = 0; i < count; i++)
        {
            await Task.Yield();
            yield return i;
        }
    }

    /// <summary>Producers whose token callback throws.</summary>
    private sealed class Producer
    {
        private volatile bool _ended;

        /// <summary>Whether the producer's enumerator has been disposed (its finally ran).</summary>
        public bool Ended => _ended;

        /// <summary>Yields 0, 1, 2, then waits for its token.</summary>
        public IAsyncEnumerable<int> ThenWaitAsync() => ThenWaitAsync(static i => i);

        public async IAsyncEnumerable<T> ThenWaitAsync<T>(Func<int, T> item, [EnumeratorCancellation] CancellationToken cancellationToken = default)
        {
            cancellationToken.Register(static () => throw new InvalidOperationException("The producer's cancellation callback failed."));
            try
            {
                for (int i = 0; i < 3; i++)
                {
                    yield return item(i);
                }

                await Task.Delay(Timeout.Infinite, cancellationToken);
            }
            finally
            {
                _ended = true;
            }
        }

        /// <summary>Yields 0, 1, then fails with <paramref name="message"/>.</summary>
        public async IAsyncEnumerable<int> ThenFailAsync(string message, [EnumeratorCancellation] CancellationToken cancellationToken = default)
        {
            cancellationToken.Register(static () => throw new InvalidOperationException("The producer's cancellation callback failed."));
            try
            {
                yield return 0;
                yield return 1;
                await Task.Yield();
                throw new InvalidOperationException(message);
            }
            finally
            {
                _ended = true;
            }
        }
    }
}
