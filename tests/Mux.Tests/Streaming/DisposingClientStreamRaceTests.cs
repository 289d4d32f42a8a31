using Mux.Protocol;
using Mux.Tests.Infrastructure;

namespace Mux.Tests.Streaming;

/// <summary>
/// The streaming side of DisposingClientRaceTests: a streaming call (a stream of results, or of
/// arguments) left unsent by the close of a disposing client fails as closed, once, never as
/// "not sent, safe to retry" (a caller that retries on
/// <see cref="MuxConnectionException.IsSafeToRetry"/> would retry on a client that will send
/// nothing again), as a call without a stream does.
/// </summary>
public sealed class DisposingClientStreamRaceTests
{
    /// <summary>
    /// The server allows one call at a time: the streaming call made second waits for the first
    /// one's slot, unsent. The dispose closes the connection, which fails it as never sent; the
    /// stream's code passed that "safe to retry" on as it came.
    /// </summary>
    [Theory]
    [InlineData(false, false)]
    [InlineData(false, true)]
    [InlineData(true, false)]
    [InlineData(true, true)]
    public async Task AStreamingCallThatDoesNotWait_LeftUnsentByTheDisposesClose_FailsAsClosed_NotSafeToRetry(bool balanced, bool streamsArguments)
    {
        await using DisposingClientScene scene = await DisposingClientScene.StartAsync(balanced, maxConcurrentCalls: 1);
        var failsFast = new MuxCallOptions { WaitForConnection = false };
        ITestService calls = scene.Client.CreateProxy<ITestService>(failsFast);
        IStreamService streams = scene.Client.CreateProxy<IStreamService>(failsFast);

        // The first call takes the one slot (the server never answers it); the stream waits for it.
        Task<int> first = calls.Add(1, 2).AsTask();
        Assert.Equal(FrameType.Request, (await scene.Server.ExpectFrameAsync()).Type);
        var producerStarted = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        Task second = streamsArguments ? streams.Sum(NumbersAsync(producerStarted)) : ReadAllAsync(streams.Range(0, 3));
        Assert.False(second.IsCompleted);

        ValueTask dispose = scene.Client.DisposeAsync();
        await DisposingClientScene.AssertFailsAsClosedAsync(second);

        // The stream of arguments never started: nothing of the call went out.
        Assert.False(producerStarted.Task.IsCompleted);

        // The first call was sent: the close fails it as it fails any call in flight.
        MuxConnectionException inFlight = await Assert.ThrowsAsync<MuxConnectionException>(() => first.WaitAsync(TestHost.Patience));
        Assert.False(inFlight.IsSafeToRetry, inFlight.Message);

        // Nothing of the second call ever reached the server.
        while (await scene.Server.ReceiveFrameAsync().WaitAsync(TestHost.Patience) is { } frame)
        {
            Assert.NotEqual(FrameType.Request, frame.Type);
            Assert.NotEqual(FrameType.StreamItem, frame.Type);
        }

        scene.Server.Dispose();
        await dispose.AsTask().WaitAsync(TestHost.Patience);
    }

    private static async IAsyncEnumerable<int> NumbersAsync(TaskCompletionSource started)
    {
        started.TrySetResult();
        yield return 1;
        await Task.Yield();
        yield return 2;
    }

    private static async Task ReadAllAsync(IAsyncEnumerable<int> items)
    {
        await foreach (int item in items)
        {
            _ = item;
        }
    }
}
