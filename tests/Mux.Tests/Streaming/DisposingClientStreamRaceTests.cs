using System.Net.Sockets;
using Microsoft.Extensions.Time.Testing;
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
        using TcpListener listener = RawMuxPeer.Listen();

        // The clock never moves: the dispose's drain waits for this server until the test closes it.
        var options = new MuxClientOptions { TimeProvider = new FakeTimeProvider(), KeepAliveInterval = Timeout.InfiniteTimeSpan };
        if (balanced)
        {
            options.EndPoints.Add(listener.LocalEndpoint);
        }
        else
        {
            options.EndPoint = listener.LocalEndpoint;
        }

        Task<MuxClient> connecting = MuxClient.ConnectAsync(options);
        RawMuxPeer server = await RawMuxPeer.AcceptAsync(listener).WaitAsync(TestHost.Patience);
        MuxClient? client = null;
        try
        {
            await server.AnswerHelloAsync(maxConcurrentCalls: 1);
            client = await connecting.WaitAsync(TestHost.Patience);
            var failsFast = new MuxCallOptions { WaitForConnection = false };
            ITestService calls = client.CreateProxy<ITestService>(failsFast);
            IStreamService streams = client.CreateProxy<IStreamService>(failsFast);

            // The first call takes the one slot (the server never answers it); the stream waits for it.
            Task<int> first = calls.Add(1, 2).AsTask();
            Assert.Equal(FrameType.Request, (await server.ExpectFrameAsync()).Type);
            var producerStarted = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
            Task second = streamsArguments ? streams.Sum(NumbersAsync(producerStarted)) : ReadAllAsync(streams.Range(0, 3));
            Assert.False(second.IsCompleted);

            ValueTask dispose = client.DisposeAsync();

            MuxConnectionException failed = await Assert.ThrowsAsync<MuxConnectionException>(() => second.WaitAsync(TestHost.Patience));
            Assert.False(failed.IsSafeToRetry, failed.Message);
            Assert.Equal(MuxCloseReason.LocalShutdown, failed.Reason);
            Assert.EndsWith(" is closed.", failed.Message, StringComparison.Ordinal);

            // The stream of arguments never started: nothing of the call went out.
            Assert.False(producerStarted.Task.IsCompleted);

            // The first call was sent: the close fails it as it fails any call in flight.
            MuxConnectionException inFlight = await Assert.ThrowsAsync<MuxConnectionException>(() => first.WaitAsync(TestHost.Patience));
            Assert.False(inFlight.IsSafeToRetry, inFlight.Message);

            // Nothing of the second call ever reached the server.
            while (await server.ReceiveFrameAsync().WaitAsync(TestHost.Patience) is { } frame)
            {
                Assert.NotEqual(FrameType.Request, frame.Type);
                Assert.NotEqual(FrameType.StreamItem, frame.Type);
            }

            server.Dispose();
            await dispose.AsTask().WaitAsync(TestHost.Patience);
        }
        finally
        {
            server.Dispose();
            if (client is not null)
            {
                await client.DisposeAsync().AsTask().WaitAsync(TestHost.Patience);
            }
        }
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
