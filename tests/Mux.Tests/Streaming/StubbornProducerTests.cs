using System.Runtime.CompilerServices;
using Mux.Server;
using Mux.Tests.Infrastructure;

namespace Mux.Tests.Streaming;

/// <summary>A server stream whose producer ignores its cancellation token.</summary>
[MuxService]
public interface IStubbornStreams
{
    /// <summary>Streams 0, then waits for StubbornStreams.Gate (ignoring any cancellation), then streams 1.</summary>
    IAsyncEnumerable<int> Stubborn();
}

/// <summary>The server side of <see cref="IStubbornStreams"/>.</summary>
public sealed class StubbornStreams : IStubbornStreams
{
    public StubbornProducer Producer { get; } = new();

    public IAsyncEnumerable<int> Stubborn() => Producer.Items(first: 0);
}

/// <summary>A producer that makes one item, then waits for <see cref="Gate"/> without looking at
/// any token, then makes one more; it records when it waits and when it was disposed.</summary>
public sealed class StubbornProducer
{
    public TaskCompletionSource Waiting { get; } = new(TaskCreationOptions.RunContinuationsAsynchronously);

    public TaskCompletionSource Gate { get; } = new(TaskCreationOptions.RunContinuationsAsynchronously);

    public TaskCompletionSource Disposed { get; } = new(TaskCreationOptions.RunContinuationsAsynchronously);

    /// <summary><paramref name="first"/> (unless null), then, once the gate opens, 1.</summary>
    public async IAsyncEnumerable<int> Items(int? first)
    {
        try
        {
            if (first is { } item)
            {
                yield return item;
            }

            Waiting.TrySetResult();
            await Gate.Task;
            yield return 1;
        }
        finally
        {
            Disposed.TrySetResult();
        }
    }
}

/// <summary>A stream's producer that ignores cancellation (the user's IAsyncEnumerable, on either
/// side) does not hold its call open: the call ends with its cancellation on time, the server's
/// call gives its slot back, and the producer is disposed when it next yields.</summary>
public sealed class StubbornProducerTests
{
    private static readonly TimeSpan Patience = TestHost.Patience;

    [Fact]
    public async Task AClientStreamWhoseProducerIgnoresCancellation_StillEndsTheCallWhenItsCallerCancels()
    {
        await using StreamingTests.Host host = await StreamingTests.Host.StartAsync();
        var producer = new StubbornProducer();
        using var cancel = new CancellationTokenSource();

        Task call = host.Proxy.Ignore(producer.Items(first: null), cancel.Token);
        await producer.Waiting.Task.WaitAsync(Patience);
        cancel.Cancel();

        await Assert.ThrowsAnyAsync<OperationCanceledException>(() => call.WaitAsync(Patience));
        await host.Service.IgnoreCanceled.Task.WaitAsync(Patience);
        Assert.False(producer.Disposed.Task.IsCompleted); // Still waiting: nothing can dispose it now.

        producer.Gate.SetResult();
        await producer.Disposed.Task.WaitAsync(Patience); // Disposed when it yielded.
        Assert.Equal(5, await host.Client.CreateProxy<ITestService>().Add(2, 3).AsTask().WaitAsync(Patience));
    }

    [Theory]
    [InlineData(false)]
    [InlineData(true)]
    public async Task AServerStreamWhoseProducerIgnoresCancellation_StillFinishesItsCall_WhenTheClientCancelsOrTheConnectionIsLost(bool connectionLost)
    {
        var service = new StubbornStreams();
        var server = new MuxServer(new MuxServerOptions());
        server.AddService<IStubbornStreams>(service);
        await using (server)
        {
            MuxClient client = await server.ConnectInMemoryAsync().WaitAsync(Patience);
            await using (client)
            {
                ServerConnection connection = server.Connections.Single();
                using var cancel = new CancellationTokenSource();
                IAsyncEnumerator<int> stream = client.CreateProxy<IStubbornStreams>().Stubborn().GetAsyncEnumerator(cancel.Token);
                Assert.True(await stream.MoveNextAsync().AsTask().WaitAsync(Patience));
                await service.Producer.Waiting.Task.WaitAsync(Patience);

                if (connectionLost)
                {
                    await client.DisposeAsync();
                    await connection.Completion.WaitAsync(Patience);
                }
                else
                {
                    cancel.Cancel();
                    await Assert.ThrowsAnyAsync<OperationCanceledException>(() => stream.MoveNextAsync().AsTask().WaitAsync(Patience));
                }

                await stream.DisposeAsync().AsTask().WaitAsync(Patience);

                // The server's call has finished (its slot is free), though its producer still waits.
                await Hosts.WaitUntilAsync(() => connection.Incoming.Count == 0, "the server's call to finish");
                Assert.False(service.Producer.Disposed.Task.IsCompleted);
                service.Producer.Gate.SetResult();
                await service.Producer.Disposed.Task.WaitAsync(Patience);
            }
        }
    }
}
