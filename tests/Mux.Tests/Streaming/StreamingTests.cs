using System.Net;
using System.Runtime.CompilerServices;
using Mux.Tests.Infrastructure;

namespace Mux.Tests.Streaming;

/// <summary>IAsyncEnumerable arguments and results: order, completeness, flow control, cancellation
/// from either side, failures and connection loss, each stream ending exactly once.</summary>
public sealed class StreamingTests
{
    private static readonly TimeSpan Patience = TestHost.Patience;

    /// <summary>A server with a <see cref="StreamService"/> and one client (in memory, or over
    /// loopback TCP); <see cref="LargeStreamTests"/> uses it too.</summary>
    internal sealed class Host : IAsyncDisposable
    {
        public required MuxServer Server { get; init; }

        public required MuxClient Client { get; init; }

        public required StreamService Service { get; init; }

        public IStreamService Proxy => Client.CreateProxy<IStreamService>();

        public static async Task<Host> StartAsync(bool tcp = false, MuxServerOptions? serverOptions = null, MuxClientOptions? clientOptions = null)
        {
            serverOptions ??= new MuxServerOptions { EnableDetailedErrors = true };
            var service = new StreamService();
            var server = new MuxServer(serverOptions);
            server.AddService<IStreamService>(service);
            server.AddService<ITestService>(new TestService());
            MuxClient client;
            if (tcp)
            {
                serverOptions.EndPoint ??= new IPEndPoint(IPAddress.Loopback, 0);
                await server.StartAsync().WaitAsync(Patience);
                client = await MuxClient.ConnectAsync(server.LocalEndPoint!, clientOptions).WaitAsync(Patience);
            }
            else
            {
                client = await server.ConnectInMemoryAsync(clientOptions).WaitAsync(Patience);
            }

            return new Host { Server = server, Client = client, Service = service };
        }

        public async ValueTask DisposeAsync()
        {
            await Client.DisposeAsync().AsTask().WaitAsync(Patience);
            using var deadline = new CancellationTokenSource(Patience);
            await Server.StopAsync(deadline.Token).WaitAsync(Patience + Patience);
        }
    }

    private static async IAsyncEnumerable<int> Numbers(int count, [EnumeratorCancellation] CancellationToken cancellationToken = default)
    {
        for (int i = 0; i < count; i++)
        {
            cancellationToken.ThrowIfCancellationRequested();
            yield return i;
            if (i % 1000 == 0)
            {
                await Task.Yield();
            }
        }
    }

    [Fact]
    public async Task AnItemIsDelivered_WhileTheProducerIsStillBusyMakingTheNext()
    {
        // Quickly made small items are sent in batches; a batch must not wait for a producer that
        // then blocks its thread: every item made before the gate arrives while it is still shut.
        await using Host host = await Host.StartAsync(tcp: true);

        await using IAsyncEnumerator<int> stream = host.Proxy.Gated(100).GetAsyncEnumerator();
        for (int i = 0; i < StreamService.GatedAt; i++)
        {
            Assert.True(await stream.MoveNextAsync().AsTask().WaitAsync(Patience));
            Assert.Equal(i, stream.Current);
        }

        Assert.False(host.Service.Gate.IsSet);
        host.Service.Gate.Set();
        for (int i = StreamService.GatedAt; i < 100; i++)
        {
            Assert.True(await stream.MoveNextAsync().AsTask().WaitAsync(Patience));
            Assert.Equal(i, stream.Current);
        }

        Assert.False(await stream.MoveNextAsync().AsTask().WaitAsync(Patience));
    }

    [Fact]
    public async Task ClientStream_OfManyItems_IsReadCompletelyByTheHandler()
    {
        await using Host host = await Host.StartAsync();

        long sum = await host.Proxy.Sum(Numbers(50_000)).WaitAsync(Patience);

        Assert.Equal(50_000L * 49_999 / 2, sum);
    }

    [Fact]
    public async Task ClientStream_ThatTheHandlerStopsReadingEarly_StopsTheClientsProducer()
    {
        await using Host host = await Host.StartAsync();
        var producerStopped = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);

        int sum = await host.Proxy.SumFirst(10, Endless(producerStopped)).AsTask().WaitAsync(Patience);

        Assert.Equal(45, sum);
        await producerStopped.Task.WaitAsync(Patience);
    }

    private static async IAsyncEnumerable<int> Endless(TaskCompletionSource stopped, [EnumeratorCancellation] CancellationToken cancellationToken = default)
    {
        try
        {
            for (int i = 0; ; i++)
            {
                await Task.Yield();
                cancellationToken.ThrowIfCancellationRequested();
                yield return i;
            }
        }
        finally
        {
            stopped.TrySetResult();
        }
    }

    [Fact]
    public async Task Duplex_EchoesEveryLineAsItArrives()
    {
        await using Host host = await Host.StartAsync();
        var lines = System.Threading.Channels.Channel.CreateUnbounded<string>();

        await using IAsyncEnumerator<string> answers = host.Proxy.Echo("> ", lines.Reader.ReadAllAsync()).GetAsyncEnumerator();
        for (int i = 0; i < 100; i++)
        {
            // One line at a time: each answer must come back before the next line is written.
            await lines.Writer.WriteAsync("line " + i);
            Assert.True(await answers.MoveNextAsync().AsTask().WaitAsync(Patience));
            Assert.Equal("> line " + i, answers.Current);
        }

        lines.Writer.Complete();
        Assert.False(await answers.MoveNextAsync().AsTask().WaitAsync(Patience));
    }

    [Fact]
    public async Task DuplexClientProducerThatThrows_EndsTheConsumerOnceWithItsException_AfterTheEchoesBeforeIt()
    {
        await using Host host = await Host.StartAsync();
        var lines = System.Threading.Channels.Channel.CreateUnbounded<string>();

        await using IAsyncEnumerator<string> answers = host.Proxy.Echo("> ", LinesThenFailure(lines.Reader, "keyboard unplugged")).GetAsyncEnumerator();
        for (int i = 0; i < 3; i++)
        {
            await lines.Writer.WriteAsync("line " + i);
            Assert.True(await answers.MoveNextAsync().AsTask().WaitAsync(Patience));
            Assert.Equal("> line " + i, answers.Current);
        }

        lines.Writer.Complete(); // The producer throws after its last line.
        var ex = await Assert.ThrowsAsync<InvalidOperationException>(() => answers.MoveNextAsync().AsTask()).WaitAsync(Patience);
        Assert.Equal("keyboard unplugged", ex.Message);
        Assert.False(await answers.MoveNextAsync().AsTask().WaitAsync(Patience));
    }

    private static async IAsyncEnumerable<string> LinesThenFailure(System.Threading.Channels.ChannelReader<string> lines, string message)
    {
        await foreach (string line in lines.ReadAllAsync())
        {
            yield return line;
        }

        throw new InvalidOperationException(message);
    }

    [Fact]
    public async Task SlowConsumerOfOneStream_DoesNotHoldUpOneHundredOtherCallers()
    {
        await using Host host = await Host.StartAsync(tcp: true, clientOptions: new MuxClientOptions { StreamWindow = 4 });
        ITestService calls = host.Client.CreateProxy<ITestService>();

        // A stream read one item and then not at all: its producer runs out of credit and waits.
        // With a window of 4 (credit sent back 2 at a time) and one item read, the producer sends
        // 4 items, makes a fifth and waits for credit that never comes: it stops at exactly 5.
        await using IAsyncEnumerator<byte[]> stalled = host.Proxy.Blobs(10_000, 64 * 1024).GetAsyncEnumerator();
        Assert.True(await stalled.MoveNextAsync().AsTask().WaitAsync(Patience));
        await Hosts.WaitUntilAsync(() => host.Service.Produced == 5, "the stream's producer to use up its window");

        var callers = new Task[100];
        for (int c = 0; c < callers.Length; c++)
        {
            int caller = c;
            callers[c] = Task.Run(async () =>
            {
                for (int i = 0; i < 20; i++)
                {
                    Assert.Equal(caller + i, await calls.Add(caller, i));
                }
            });
        }

        await Task.WhenAll(callers).WaitAsync(Patience);
        Assert.All(callers, task => Assert.True(task.IsCompletedSuccessfully));

        // Every caller finished while the stream was still stalled: its producer has not moved.
        Assert.Equal(5, host.Service.Produced);
        Assert.Equal(0, host.Service.ProducersEnded);

        // And the stalled stream still delivers the rest, in order, once it is read.
        Assert.True(StreamService.IsBlob(stalled.Current, 0));
        int index = 1;
        while (index < 50 && await stalled.MoveNextAsync().AsTask().WaitAsync(Patience))
        {
            Assert.True(StreamService.IsBlob(stalled.Current, index), $"Item {index} is not what the server sent as item {index}.");
            index++;
        }

        Assert.Equal(50, index);
    }

    [Fact]
    public async Task ConsumerThatCancels_EndsWithOperationCanceled_AndTheServersProducerTokenFires()
    {
        await using Host host = await Host.StartAsync();
        using var cancel = new CancellationTokenSource();

        int read = 0;
        await Assert.ThrowsAnyAsync<OperationCanceledException>(async () =>
        {
            await foreach (int value in host.Proxy.Forever(cancel.Token))
            {
                if (++read == 100)
                {
                    cancel.Cancel();
                }
            }
        }).WaitAsync(Patience);

        Assert.Equal(100, read);
        await host.Service.ForeverCanceled.Task.WaitAsync(Patience);
        Assert.Equal(5, await host.Client.CreateProxy<ITestService>().Add(2, 3).AsTask().WaitAsync(Patience));
    }

    [Fact]
    public async Task ConsumerThatStopsEarly_StopsTheServersProducer()
    {
        await using Host host = await Host.StartAsync();

        await foreach (int value in host.Proxy.Forever().WithCancellation(new CancellationTokenSource(Patience).Token))
        {
            if (value == 10)
            {
                break;
            }
        }

        await host.Service.ForeverCanceled.Task.WaitAsync(Patience);
    }

    [Fact]
    public async Task ServerProducerThatThrows_EndsTheConsumerWithRemoteException_AfterTheItemsBeforeIt()
    {
        await using Host host = await Host.StartAsync();

        var received = new List<int>();
        var ex = await Assert.ThrowsAsync<MuxRemoteException>(async () =>
        {
            await foreach (int value in host.Proxy.ThrowAfter(5, "disk on fire"))
            {
                received.Add(value);
            }
        }).WaitAsync(Patience);

        Assert.Equal([0, 1, 2, 3, 4], received);
        Assert.Equal(MuxStatusCode.HandlerFailed, ex.StatusCode);
        Assert.Equal("disk on fire", ex.Message);
    }

    [Fact]
    public async Task ServerProducerThatCancels_EndsTheConsumerWithOperationCanceled_AfterTheItemsBeforeIt()
    {
        await using Host host = await Host.StartAsync();

        var received = new List<int>();
        var ex = await Assert.ThrowsAsync<OperationCanceledException>(async () =>
        {
            await foreach (int value in host.Proxy.CancelAfter(3, "the server gave up"))
            {
                received.Add(value);
            }
        }).WaitAsync(Patience);

        Assert.Equal([0, 1, 2], received);
        Assert.Equal("the server gave up", ex.Message);
        var remote = Assert.IsType<MuxRemoteException>(ex.InnerException);
        Assert.Equal(MuxStatusCode.Canceled, remote.StatusCode);
    }

    [Fact]
    public async Task ClientProducerThatThrows_FailsTheCallWithItsException_AndTheHandlerSeesARemoteException()
    {
        await using Host host = await Host.StartAsync();

        var ex = await Assert.ThrowsAsync<InvalidOperationException>(() => host.Proxy.Drain(FailingAfter(3))).WaitAsync(Patience);

        Assert.Equal("sensor unplugged", ex.Message);
        Exception? seen = await host.Service.DrainEnded.Task.WaitAsync(Patience);
        var remote = Assert.IsType<MuxRemoteException>(seen);
        Assert.Contains("sensor unplugged", remote.Message, StringComparison.Ordinal);

        // The failed producer also cancels the call, and a cancel drops items not yet read: the
        // handler reads at most the three sent, and never one more.
        Assert.InRange(host.Service.DrainCount, 0, 3);
    }

    [Fact]
    public async Task ClientProducerThatCancelsItself_FailsTheCallWithItsCancellation_AndTheHandlerSeesCanceled()
    {
        await using Host host = await Host.StartAsync();

        var ex = await Assert.ThrowsAsync<OperationCanceledException>(() => host.Proxy.Drain(CanceledAfter(3))).WaitAsync(Patience);

        Assert.Equal("the sensor gave up", ex.Message);
        Exception? seen = await host.Service.DrainEnded.Task.WaitAsync(Patience);
        var remote = Assert.IsType<MuxRemoteException>(seen);
        Assert.Equal(MuxStatusCode.Canceled, remote.StatusCode);
        Assert.Equal("The client's stream failed: System.OperationCanceledException: the sensor gave up", remote.Message);
    }

    // Cancels itself (its own OperationCanceledException, not the call's token).
    private static async IAsyncEnumerable<int> CanceledAfter(int count)
    {
        for (int i = 0; i < count; i++)
        {
            yield return i;
        }

        await Task.Yield();
        throw new OperationCanceledException("the sensor gave up");
    }

    private static async IAsyncEnumerable<int> FailingAfter(int count)
    {
        for (int i = 0; i < count; i++)
        {
            yield return i;
        }

        await Task.Yield();
        throw new InvalidOperationException("sensor unplugged");
    }

    [Fact]
    public async Task ClientThatCancelsAClientStream_EndsTheHandlersReadingWithOperationCanceled()
    {
        await using Host host = await Host.StartAsync();
        using var cancel = new CancellationTokenSource();
        var producerStopped = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        IStreamService proxy = host.Proxy;

        Task call = proxy.Drain(Endless(producerStopped), cancel.Token);
        await Hosts.WaitUntilAsync(() => host.Service.DrainCount > 100, "the handler to read some items");
        cancel.Cancel();

        await Assert.ThrowsAnyAsync<OperationCanceledException>(() => call).WaitAsync(Patience);
        Assert.IsAssignableFrom<OperationCanceledException>(await host.Service.DrainEnded.Task.WaitAsync(Patience));
        await producerStopped.Task.WaitAsync(Patience);
    }

    [Fact]
    public async Task ConnectionLostMidStream_EndsTheConsumerOnceWithConnectionException()
    {
        await using Host host = await Host.StartAsync(tcp: true, clientOptions: new MuxClientOptions { AutoReconnect = false });

        int read = 0;
        var ex = await Assert.ThrowsAsync<MuxConnectionException>(async () =>
        {
            await foreach (int value in host.Proxy.Forever())
            {
                if (++read == 50)
                {
                    foreach (Mux.Server.ServerConnection connection in host.Server.Connections)
                    {
                        connection.Close(MuxCloseReason.TransportError, new IOException("the cable was cut"));
                    }
                }
            }
        }).WaitAsync(Patience);

        Assert.True(read >= 50);
        await host.Service.ForeverCanceled.Task.WaitAsync(Patience);
    }

    [Fact]
    public async Task ConnectionLostDuringAClientStream_FailsTheCallOnce_EndsTheHandlersReading_AndStopsTheClientsProducer()
    {
        await using Host host = await Host.StartAsync(tcp: true, clientOptions: new MuxClientOptions { AutoReconnect = false });
        var producerStopped = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);

        Task call = host.Proxy.Drain(Endless(producerStopped));
        await Hosts.WaitUntilAsync(() => host.Service.DrainCount > 100, "the handler to read some items");
        foreach (Mux.Server.ServerConnection connection in host.Server.Connections)
        {
            connection.Close(MuxCloseReason.TransportError, new IOException("the cable was cut"));
        }

        await Assert.ThrowsAsync<MuxConnectionException>(() => call).WaitAsync(Patience);
        Assert.IsAssignableFrom<OperationCanceledException>(await host.Service.DrainEnded.Task.WaitAsync(Patience));
        await producerStopped.Task.WaitAsync(Patience);
    }

    [Fact]
    public async Task ServerThatStopsWhileItStreams_FiresItsProducersToken_AndEndsTheConsumerOnce()
    {
        await using Host host = await Host.StartAsync(tcp: true, clientOptions: new MuxClientOptions { AutoReconnect = false });

        await using IAsyncEnumerator<int> stream = host.Proxy.Forever().GetAsyncEnumerator();
        for (int i = 0; i < 50; i++)
        {
            Assert.True(await stream.MoveNextAsync().AsTask().WaitAsync(Patience));
            Assert.Equal(i, stream.Current);
        }

        // The stop waits for calls in flight until its token fires, then cancels them: the
        // server's side of the stream is cancelled.
        using var deadline = new CancellationTokenSource(TimeSpan.FromMilliseconds(200));
        await host.Server.StopAsync(deadline.Token).WaitAsync(Patience);
        await host.Service.ForeverCanceled.Task.WaitAsync(Patience);

        // The consumer reads what was already buffered, in order, then its loop ends with one exception.
        Exception? ended = null;
        int after = 0;
        try
        {
            while (await stream.MoveNextAsync().AsTask().WaitAsync(Patience))
            {
                Assert.Equal(50 + after, stream.Current);
                after++;
            }
        }
        catch (Exception ex)
        {
            ended = ex;
        }

        // Out of patience, the server closes the connection first and cancels the handlers after:
        // their Error frames never leave, so the consumer learns of the end from the close.
        Assert.IsType<MuxConnectionException>(ended);
        Assert.False(await stream.MoveNextAsync().AsTask().WaitAsync(Patience)); // Ended, and only once.
    }

    [Fact]
    public async Task StreamingCall_CountsAsOneCallAgainstTheServersCap()
    {
        await using Host host = await Host.StartAsync(serverOptions: new MuxServerOptions { MaxConcurrentCallsPerConnection = 2 });

        // Two open streams take both slots; a third call waits until one of them ends.
        await using IAsyncEnumerator<int> first = host.Proxy.Forever().GetAsyncEnumerator();
        await using IAsyncEnumerator<int> second = host.Proxy.Forever().GetAsyncEnumerator();
        Assert.True(await first.MoveNextAsync().AsTask().WaitAsync(Patience));
        Assert.True(await second.MoveNextAsync().AsTask().WaitAsync(Patience));

        // A call that finds a slot is in the connection's table of pending calls before the proxy
        // returns it (and leaves it only once answered), so right after the call is made, "two
        // pending and the third not complete" can only mean that it waits for a slot: no amount
        // of time would tell more, and none is waited for.
        Task<int> third = host.Client.CreateProxy<ITestService>().Add(1, 2).AsTask();
        int pending = host.Client.Connection.PendingCallCount;
        bool completed = third.IsCompleted;
        Assert.True(pending == 2, $"{pending} calls pending on the connection: the third call took a slot although two open streams held both.");
        Assert.False(completed, "The third call completed although two open streams held both slots.");

        await first.DisposeAsync();
        Assert.Equal(3, await third.WaitAsync(Patience));
    }

    [Theory]
    [InlineData(0)]
    [InlineData(65537)]
    public void StreamWindow_OutOfRange_IsRefusedWithAMessageThatSaysHowToFixIt(int window)
    {
        var ex = Assert.Throws<InvalidOperationException>(() => new MuxClientOptions { EndPoint = new IPEndPoint(IPAddress.Loopback, 1), StreamWindow = window }.Validate());
        Assert.Contains("MuxClientOptions.StreamWindow is " + window, ex.Message, StringComparison.Ordinal);
        Assert.Contains("between 1 and 65536", ex.Message, StringComparison.Ordinal);

        var server = Assert.Throws<InvalidOperationException>(() => new MuxServerOptions { EndPoint = new IPEndPoint(IPAddress.Loopback, 0), StreamWindow = window }.Validate());
        Assert.Contains("MuxServerOptions.StreamWindow is " + window, server.Message, StringComparison.Ordinal);
    }
}
