using System.Globalization;
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

    /// <summary>StubbornProducer.Listening: hears its token's cancel, then ignores it.</summary>
    IAsyncEnumerable<int> Listening();

    /// <summary>StubbornProducer.Flooding, past a window of <paramref name="window"/> items.</summary>
    IAsyncEnumerable<int> Flooding(int window);
}

/// <summary>The server side of <see cref="IStubbornStreams"/>.</summary>
public sealed class StubbornStreams : IStubbornStreams
{
    public StubbornProducer Producer { get; } = new();

    public IAsyncEnumerable<int> Stubborn() => Producer.Items(first: 0);

    public IAsyncEnumerable<int> Listening() => Producer.Listening();

    public IAsyncEnumerable<int> Flooding(int window) => Producer.Flooding(window);
}

/// <summary>A producer that makes one item, then waits for <see cref="Gate"/> without looking at
/// any token, then makes one more; it records when it waits and when it was disposed.</summary>
public sealed class StubbornProducer
{
    public TaskCompletionSource Waiting { get; } = new(TaskCreationOptions.RunContinuationsAsynchronously);

    public TaskCompletionSource Gate { get; } = new(TaskCreationOptions.RunContinuationsAsynchronously);

    public TaskCompletionSource Disposed { get; } = new(TaskCreationOptions.RunContinuationsAsynchronously);

    /// <summary>Completed by the callback Listening registers on its token first.</summary>
    public TaskCompletionSource Heard { get; } = new(TaskCreationOptions.RunContinuationsAsynchronously);

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

    /// <summary>Counts up without ever waiting (Waiting once it has made <paramref name="window"/>
    /// items, all its consumer's window holds), listening on its token (Heard). A newer callback of
    /// that token holds the cancel until the producer is disposed (or for up to two seconds): a
    /// stream that disposes it while the cancel runs unregisters Heard's callback before the
    /// cancel gets to it.</summary>
    public async IAsyncEnumerable<int> Flooding(int window, [EnumeratorCancellation] CancellationToken cancellationToken = default)
    {
        CancellationTokenRegistration heard = cancellationToken.Register(() => Heard.TrySetResult());
        try
        {
            // Never disposed here: disposing a registration waits for its running callback.
            cancellationToken.Register(() => Disposed.Task.Wait(TimeSpan.FromSeconds(2)));
            for (int i = 0; ; i++)
            {
                if (i == window)
                {
                    Waiting.TrySetResult();
                }

                yield return i;
            }
        }
        finally
        {
            heard.Dispose();
            Disposed.TrySetResult();
        }
    }

    /// <summary>Items(first: 0) as strings, for a duplex call's stream of lines.</summary>
    public async IAsyncEnumerable<string> Lines()
    {
        await foreach (int item in Items(first: 0))
        {
            yield return item.ToString(CultureInfo.InvariantCulture);
        }
    }

    /// <summary>0; then, listening on its token (Heard), waits for a newer callback of that token
    /// to wake it, which the token's cancel runs first (newest first) and which resumes it at once,
    /// inside the cancel; it then yields 1 and waits for the gate, ignoring the cancel. So the
    /// stream stops while the cancel has yet to run the producer's first callback, which disposing
    /// the enumerator at its yield would unregister.</summary>
    public async IAsyncEnumerable<int> Listening([EnumeratorCancellation] CancellationToken cancellationToken = default)
    {
        try
        {
            using CancellationTokenRegistration heard = cancellationToken.Register(() => Heard.TrySetResult());
            yield return 0;

            var woken = new TaskCompletionSource(); // Its continuation runs inside the waker's callback.
            using (cancellationToken.Register(() => woken.TrySetResult()))
            {
                Waiting.TrySetResult();
                await woken.Task;
            }

            yield return 1;
            await Gate.Task;
            yield return 2;
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

    [Fact]
    public async Task ADuplexCallWhoseProducerIgnoresCancellation_StillEndsWhenItsConsumerLeaves()
    {
        await using StreamingTests.Host host = await StreamingTests.Host.StartAsync();
        var producer = new StubbornProducer();

        IAsyncEnumerator<string> answers = host.Proxy.Echo("> ", producer.Lines()).GetAsyncEnumerator();
        Assert.True(await answers.MoveNextAsync().AsTask().WaitAsync(Patience));
        Assert.Equal("> 0", answers.Current);
        await producer.Waiting.Task.WaitAsync(Patience);

        // The consumer leaves: the call ends, though its producer still waits.
        await answers.DisposeAsync().AsTask().WaitAsync(Patience);
        Assert.False(producer.Disposed.Task.IsCompleted);

        producer.Gate.SetResult();
        await producer.Disposed.Task.WaitAsync(Patience); // Disposed when it yielded.
        Assert.Equal(5, await host.Client.CreateProxy<ITestService>().Add(2, 3).AsTask().WaitAsync(Patience));
    }

    [Theory]
    [InlineData(false)]
    [InlineData(true)]
    public async Task AServerStreamWhoseProducerIgnoresCancellation_StillFinishesItsCall_WhenTheClientCancelsOrTheConnectionIsLost(bool connectionLost)
    {
        await using ServerStreamScene scene = await ServerStreamScene.StartAsync(static proxy => proxy.Stubborn());
        if (connectionLost)
        {
            await scene.Client.DisposeAsync();
            await scene.Connection.Completion.WaitAsync(Patience);
        }
        else
        {
            scene.Cancel.Cancel();
            await Assert.ThrowsAnyAsync<OperationCanceledException>(() => scene.Stream.MoveNextAsync().AsTask().WaitAsync(Patience));
        }

        await scene.Stream.DisposeAsync().AsTask().WaitAsync(Patience);

        // The server's call has finished (its slot is free), though its producer still waits.
        await Hosts.WaitUntilAsync(() => scene.Connection.Incoming.Count == 0, "the server's call to finish");
        Assert.False(scene.Producer.Disposed.Task.IsCompleted);
        scene.Producer.Gate.SetResult();
        await scene.Producer.Disposed.Task.WaitAsync(Patience);
    }

    /// <summary>Stopping at the cancel lets every callback on the token run before the producer is
    /// disposed (fe135e1 went on inside the cancel's callback loop, and disposed the producer as
    /// soon as it yielded, before the cancel reached the producer's own callback).</summary>
    [Fact]
    public async Task AClientStreamStoppedByItsCallersCancel_LetsItsProducerHearTheCancel()
    {
        await using StreamingTests.Host host = await StreamingTests.Host.StartAsync();
        var producer = new StubbornProducer();
        using var cancel = new CancellationTokenSource();

        Task call = host.Proxy.Ignore(producer.Listening(), cancel.Token);
        await producer.Waiting.Task.WaitAsync(Patience);
        cancel.Cancel();

        await Assert.ThrowsAnyAsync<OperationCanceledException>(() => call.WaitAsync(Patience));
        await producer.Heard.Task.WaitAsync(Patience);
        producer.Gate.SetResult();
        await producer.Disposed.Task.WaitAsync(Patience);
    }

    /// <summary>As above, for a server's stream whose client cancels.</summary>
    [Fact]
    public async Task AServerStreamStoppedByItsClientsCancel_LetsItsProducerHearTheCancel()
    {
        await using ServerStreamScene scene = await ServerStreamScene.StartAsync(static proxy => proxy.Listening());
        scene.Cancel.Cancel();
        await Assert.ThrowsAnyAsync<OperationCanceledException>(() => scene.Stream.MoveNextAsync().AsTask().WaitAsync(Patience));
        await scene.Stream.DisposeAsync().AsTask().WaitAsync(Patience);

        await scene.Producer.Heard.Task.WaitAsync(Patience);
        await Hosts.WaitUntilAsync(() => scene.Connection.Incoming.Count == 0, "the server's call to finish");
        scene.Producer.Gate.SetResult();
        await scene.Producer.Disposed.Task.WaitAsync(Patience);
    }

    /// <summary>A stream stopped by the cancel while it waits for credit disposes its producer only
    /// once every callback on the token has run: the window's wait, newer than the producer's
    /// callbacks, is cancelled first, and the stream went on (on the thread pool) while the cancel
    /// still ran the producer's callbacks.</summary>
    [Fact]
    public async Task AServerStreamStoppedByTheCancelWhileItWaitsForCredit_LetsItsProducerHearTheCancel()
    {
        // Too few items read (one) to grant the producer credit.
        await using ServerStreamScene scene = await ServerStreamScene.StartAsync(static proxy => proxy.Flooding(new MuxClientOptions().StreamWindow));
        scene.Cancel.Cancel();
        await Assert.ThrowsAnyAsync<OperationCanceledException>(() => scene.Stream.MoveNextAsync().AsTask().WaitAsync(Patience));
        await scene.Stream.DisposeAsync().AsTask().WaitAsync(Patience);

        await scene.Producer.Heard.Task.WaitAsync(Patience);
        await scene.Producer.Disposed.Task.WaitAsync(Patience);
        await Hosts.WaitUntilAsync(() => scene.Connection.Incoming.Count == 0, "the server's call to finish");
    }

    /// <summary>A server serving <see cref="StubbornStreams"/> in memory, its client, and one server
    /// stream that has delivered its first item, whose producer now waits.</summary>
    private sealed class ServerStreamScene : IAsyncDisposable
    {
        private readonly MuxServer _server;

        private ServerStreamScene(MuxServer server, StubbornProducer producer, MuxClient client)
        {
            _server = server;
            Producer = producer;
            Client = client;
        }

        public StubbornProducer Producer { get; }

        public MuxClient Client { get; }

        public ServerConnection Connection { get; private set; } = null!;

        public CancellationTokenSource Cancel { get; } = new();

        public IAsyncEnumerator<int> Stream { get; private set; } = null!;

        public static async Task<ServerStreamScene> StartAsync(Func<IStubbornStreams, IAsyncEnumerable<int>> open)
        {
            var service = new StubbornStreams();
            var server = new MuxServer(new MuxServerOptions());
            server.AddService<IStubbornStreams>(service);
            MuxClient client = await server.ConnectInMemoryAsync().WaitAsync(Patience);
            var scene = new ServerStreamScene(server, service.Producer, client) { Connection = server.Connections.Single() };
            scene.Stream = open(client.CreateProxy<IStubbornStreams>()).GetAsyncEnumerator(scene.Cancel.Token);
            Assert.True(await scene.Stream.MoveNextAsync().AsTask().WaitAsync(Patience));
            await service.Producer.Waiting.Task.WaitAsync(Patience);
            return scene;
        }

        public async ValueTask DisposeAsync()
        {
            await Client.DisposeAsync();
            await _server.DisposeAsync();
            Cancel.Dispose();
        }
    }
}
