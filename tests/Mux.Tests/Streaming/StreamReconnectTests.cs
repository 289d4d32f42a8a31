using System.Buffers.Binary;
using System.Net;
using System.Net.Sockets;
using System.Runtime.CompilerServices;
using MessagePack;
using Mux.Protocol;
using Mux.Tests.Fragments;
using Mux.Tests.Infrastructure;
using Mux.Tests.Protocol;
using static Mux.Tests.Protocol.ProtocolTestHelpers;

namespace Mux.Tests.Streaming;

/// <summary>Streams in progress when the server drains (GoAway) or the connection is lost while
/// the client reconnects by itself: each stream either completes or fails exactly once with
/// <see cref="MuxConnectionException"/>, nothing hangs, and new streams work on the same client
/// afterwards. Server, client and duplex streams, where they differ.</summary>
public sealed class StreamReconnectTests
{
    private static readonly TimeSpan Patience = TestHost.Patience;

    /// <summary>A stream server on loopback that can be drained, killed and restarted on its port,
    /// and one client with auto-reconnect on (fast backoff) connected to it.</summary>
    private sealed class Host : IAsyncDisposable
    {
        // Every server and service started, the stopped ones too: teardown stops them all and
        // opens every gate, so a test that failed halfway still ends promptly.
        private readonly List<(MuxServer Server, StreamService Service)> _started = [];

        // Ends the drains a test starts: cancelled by GiveUpDraining, or at teardown.
        private readonly CancellationTokenSource _giveUpDraining = new();

        private Host(IPEndPoint endPoint, MuxClient client)
        {
            EndPoint = endPoint;
            Client = client;
        }

        public IPEndPoint EndPoint { get; }

        public MuxClient Client { get; }

        public MuxServer Server => _started[^1].Server;

        public StreamService Service => _started[^1].Service;

        public IStreamService Proxy => Client.CreateProxy<IStreamService>();

        public static async Task<Host> StartAsync()
        {
            (MuxServer server, StreamService service) = await StartServerAsync(new IPEndPoint(IPAddress.Loopback, 0));
            var endPoint = (IPEndPoint)server.LocalEndPoint!;
            MuxClient client = await MuxClient.ConnectAsync(endPoint, new MuxClientOptions
            {
                ReconnectInitialDelay = TimeSpan.FromMilliseconds(20),
                ReconnectMaxDelay = TimeSpan.FromMilliseconds(200),
                CallTimeout = Patience,
            }).WaitAsync(Patience);
            var host = new Host(endPoint, client);
            host._started.Add((server, service));
            return host;
        }

        /// <summary>Starts a new server (with a new service) on the same port; the old one must be
        /// stopped or stopping (its listener closed).</summary>
        public async Task RestartAsync() => _started.Add(await StartServerAsync(EndPoint));

        /// <summary>Starts a graceful stop of the current server (GoAway, then the calls in flight
        /// are served until the test gives up, <see cref="GiveUpDraining"/>) and waits until the
        /// client has the GoAway; the returned task is the stop.</summary>
        public async Task<Task> StartDrainAsync()
        {
            Mux.Client.ClientConnection first = Client.Connection;
            Task stopping = Server.StopAsync(_giveUpDraining.Token);
            await Hosts.WaitUntilAsync(() => first.Outgoing.IsGoingAway, "the client has the server's GoAway");
            return stopping;
        }

        /// <summary>The drain runs out of patience: the server closes its connections and cancels
        /// the calls still running.</summary>
        public void GiveUpDraining() => _giveUpDraining.Cancel();

        /// <summary>Cuts every connection of the current server, as a failed network would; the
        /// server keeps listening, so the client reconnects to it.</summary>
        public void CutConnections()
        {
            foreach (Mux.Server.ServerConnection connection in Server.Connections)
            {
                connection.Close(MuxCloseReason.TransportError, new IOException("the cable was cut"));
            }
        }

        private static async Task<(MuxServer, StreamService)> StartServerAsync(IPEndPoint endPoint)
        {
            var service = new StreamService();
            var server = new MuxServer(new MuxServerOptions { EndPoint = endPoint, EnableDetailedErrors = true });
            server.AddService<IStreamService>(service);
            await server.StartAsync().WaitAsync(Patience);
            return (server, service);
        }

        public async ValueTask DisposeAsync()
        {
            _giveUpDraining.Cancel();
            foreach ((_, StreamService service) in _started)
            {
                service.Gate.Set();
            }

            await Client.DisposeAsync().AsTask().WaitAsync(Patience);
            foreach ((MuxServer server, _) in _started)
            {
                using var deadline = new CancellationTokenSource(Patience);
                await server.StopAsync(deadline.Token).WaitAsync(Patience + Patience);
            }

            _giveUpDraining.Dispose();
        }
    }

    /// <summary>0 .. count-1; before item <paramref name="gateAt"/> it waits for <paramref name="gate"/>
    /// (without blocking a thread). <paramref name="stopped"/> completes when it is disposed.</summary>
    private static async IAsyncEnumerable<int> GatedNumbers(int count, int gateAt, Task gate, TaskCompletionSource? stopped = null, [EnumeratorCancellation] CancellationToken cancellationToken = default)
    {
        try
        {
            for (int i = 0; i < count; i++)
            {
                if (i == gateAt)
                {
                    await gate.WaitAsync(cancellationToken);
                }

                yield return i;
            }
        }
        finally
        {
            stopped?.TrySetResult();
        }
    }

    /// <summary>The lines "0", "1", ...; before line <paramref name="gateAt"/> it waits for <paramref name="gate"/>.</summary>
    private static async IAsyncEnumerable<string> GatedLines(int count, int gateAt, Task gate, [EnumeratorCancellation] CancellationToken cancellationToken = default)
    {
        await foreach (int i in GatedNumbers(count, gateAt, gate, null, cancellationToken))
        {
            yield return i.ToString(System.Globalization.CultureInfo.InvariantCulture);
        }
    }

    /// <summary>A stream the test reads, each step bounded by <see cref="Patience"/>: a stream
    /// that hangs fails the test, saying so.</summary>
    private sealed class Reader<T>(IAsyncEnumerable<T> stream) : IAsyncDisposable
    {
        private readonly IAsyncEnumerator<T> _enumerator = stream.GetAsyncEnumerator();

        // A MoveNextAsync that did not finish in time; the enumerator cannot be disposed under it.
        private Task<bool>? _hung;

        public int Read { get; private set; }

        public T Current => _enumerator.Current;

        /// <summary>Starts the next step without waiting for it (to be awaited with <see cref="NextAsync"/>).</summary>
        public Task<bool> StartNext() => _enumerator.MoveNextAsync().AsTask();

        public async Task<bool> NextAsync(Task<bool>? started = null)
        {
            Task<bool> next = started ?? StartNext();
            if (await Task.WhenAny(next, Task.Delay(Patience)) != next)
            {
                _hung = next;
                throw new Xunit.Sdk.XunitException($"The stream hung after {Read} items.");
            }

            if (await next)
            {
                Read++;
                return true;
            }

            return false;
        }

        /// <summary>Reads to the end: the items, and how it ended (null: completed). Once ended, it
        /// says so from then on, without a second exception or item.</summary>
        public async Task<(List<T> Items, Exception? Ended)> ReadToEndAsync()
        {
            var items = new List<T>();
            Exception? ended = null;
            try
            {
                while (await NextAsync())
                {
                    items.Add(Current);
                }
            }
            catch (Exception ex) when (ex is not Xunit.Sdk.XunitException)
            {
                ended = ex;
            }

            Assert.False(await NextAsync(), "The stream went on after it had ended.");
            return (items, ended);
        }

        public ValueTask DisposeAsync() => _hung is null ? _enumerator.DisposeAsync() : default;
    }

    /// <summary>How a call ended (null: it succeeded); a call that hangs fails the test, saying so.</summary>
    private static async Task<Exception?> EndOfAsync(Task call)
    {
        if (await Task.WhenAny(call, Task.Delay(Patience)) != call)
        {
            throw new Xunit.Sdk.XunitException("The call hung.");
        }

        try
        {
            await call;
            return null;
        }
        catch (Exception ex)
        {
            return ex;
        }
    }

    /// <summary>All of <paramref name="stream"/>, each step bounded.</summary>
    private static async Task<List<T>> ReadAllAsync<T>(IAsyncEnumerable<T> stream)
    {
        await using var reader = new Reader<T>(stream);
        (List<T> items, Exception? ended) = await reader.ReadToEndAsync();
        Assert.Null(ended);
        return items;
    }

    /// <summary>New streams of every kind work on the client, with their values, on whatever server
    /// is up now.</summary>
    private static async Task AssertNewStreamsWorkAsync(Host host)
    {
        IStreamService proxy = host.Proxy;
        Assert.Equal(Enumerable.Range(100, 5), await ReadAllAsync(proxy.Range(100, 5)));
        Assert.Equal(4950, await proxy.Sum(GatedNumbers(100, -1, Task.CompletedTask)).WaitAsync(Patience));
        Assert.Equal(new[] { "> 0", "> 1", "> 2" }, await ReadAllAsync(proxy.Echo("> ", GatedLines(3, -1, Task.CompletedTask))));
    }

    [Fact]
    public async Task ServerStream_InProgressWhenTheServerDrains_CompletesWithEveryItem_WhileNewStreamsGoToTheNextServer()
    {
        await using Host host = await Host.StartAsync();
        StreamService first = host.Service;
        // More items than the client's window: the rest flow only on credit the client sends after the GoAway.
        await using var stream = new Reader<int>(host.Proxy.Gated(500));
        for (int i = 0; i < StreamService.GatedAt; i++)
        {
            Assert.True(await stream.NextAsync());
            Assert.Equal(i, stream.Current);
        }

        Task stopping = await host.StartDrainAsync();
        await host.RestartAsync();
        await AssertNewStreamsWorkAsync(host);
        Assert.False(stopping.IsCompleted); // The first server still serves the stream.

        first.Gate.Set();
        (List<int> rest, Exception? ended) = await stream.ReadToEndAsync();

        Assert.Null(ended);
        Assert.Equal(Enumerable.Range(StreamService.GatedAt, 500 - StreamService.GatedAt), rest);
        await stopping.WaitAsync(Patience);
        Assert.Equal(MuxClientState.Connected, host.Client.State);
    }

    [Fact]
    public async Task ClientStream_InProgressWhenTheServerDrains_IsReadToItsEnd_AndAnswered()
    {
        await using Host host = await Host.StartAsync();
        var gate = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        var producerStopped = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        Task<long> call = host.Proxy.Sum(GatedNumbers(1_000, 10, gate.Task, producerStopped));
        await Hosts.WaitUntilAsync(() => host.Server.Connections.Sum(c => c.Incoming.Count) == 1, "the handler runs");

        // The client's items after the GoAway still reach the handler, which answers with their sum.
        Task stopping = await host.StartDrainAsync();
        gate.SetResult();

        Assert.Equal(499_500, await call.WaitAsync(Patience));
        await producerStopped.Task.WaitAsync(Patience);
        await stopping.WaitAsync(Patience);

        await host.RestartAsync();
        await AssertNewStreamsWorkAsync(host);
    }

    [Fact]
    public async Task Duplex_InProgressWhenTheServerDrains_EchoesEveryLine_AndEndsWhenTheClientsStreamEnds()
    {
        await using Host host = await Host.StartAsync();
        var gate = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        await using var echoes = new Reader<string>(host.Proxy.Echo("> ", GatedLines(200, 10, gate.Task)));
        for (int i = 0; i < 10; i++)
        {
            Assert.True(await echoes.NextAsync());
            Assert.Equal($"> {i}", echoes.Current);
        }

        Task stopping = await host.StartDrainAsync();
        gate.SetResult();
        (List<string> rest, Exception? ended) = await echoes.ReadToEndAsync();

        Assert.Null(ended);
        Assert.Equal(Enumerable.Range(10, 190).Select(i => $"> {i}"), rest);
        await stopping.WaitAsync(Patience);

        await host.RestartAsync();
        await AssertNewStreamsWorkAsync(host);
    }

    [Fact]
    public async Task ServerStream_ThatOutlastsTheDrain_FailsOnceWithConnectionException_AndNewStreamsWorkAfterTheReconnect()
    {
        await using Host host = await Host.StartAsync();
        StreamService first = host.Service;
        await using var stream = new Reader<int>(host.Proxy.Forever());
        Assert.True(await stream.NextAsync());

        // The drain runs out of patience: the server closes the connection and cancels the producer.
        Task stopping = await host.StartDrainAsync();
        host.GiveUpDraining();
        await stopping.WaitAsync(Patience);
        await first.ForeverCanceled.Task.WaitAsync(Patience);
        (List<int> rest, Exception? ended) = await stream.ReadToEndAsync();

        var lost = Assert.IsType<MuxConnectionException>(ended);
        Assert.False(lost.IsSafeToRetry); // It ran: never sent again by itself.
        Assert.StartsWith($"The Mux connection to {host.EndPoint}", lost.Message, StringComparison.Ordinal);
        Assert.Equal(Enumerable.Range(1, rest.Count), rest); // What was buffered, in order, then the end.

        await host.RestartAsync();
        await AssertNewStreamsWorkAsync(host);
    }

    [Fact]
    public async Task ClientStream_ThatOutlastsTheDrain_FailsOnceWithConnectionException_StopsTheProducer_AndNewStreamsWorkAfterTheReconnect()
    {
        await using Host host = await Host.StartAsync();
        StreamService first = host.Service;
        var producerStopped = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        var never = new TaskCompletionSource();

        // The handler reads nothing: the client's producer waits for credit when the drain gives up.
        Task call = host.Proxy.Ignore(GatedNumbers(int.MaxValue, int.MaxValue, never.Task, producerStopped));
        await Hosts.WaitUntilAsync(() => host.Server.Connections.Sum(c => c.Incoming.Count) == 1, "the handler runs");
        Task stopping = await host.StartDrainAsync();
        host.GiveUpDraining();
        await stopping.WaitAsync(Patience);

        var lost = Assert.IsType<MuxConnectionException>(await EndOfAsync(call));
        Assert.False(lost.IsSafeToRetry);
        Assert.StartsWith($"The Mux connection to {host.EndPoint}", lost.Message, StringComparison.Ordinal);
        await producerStopped.Task.WaitAsync(Patience);
        await first.IgnoreCanceled.Task.WaitAsync(Patience);

        await host.RestartAsync();
        await AssertNewStreamsWorkAsync(host);
    }

    [Fact]
    public async Task ServerStream_WhenTheConnectionIsLost_FailsOnceWithConnectionException_AndNewStreamsWorkAfterTheReconnect()
    {
        await using Host host = await Host.StartAsync();
        await using var stream = new Reader<int>(host.Proxy.Forever());
        for (int i = 0; i < 50; i++)
        {
            Assert.True(await stream.NextAsync());
            Assert.Equal(i, stream.Current);
        }

        host.CutConnections();
        (List<int> rest, Exception? ended) = await stream.ReadToEndAsync();

        AssertLost(host, ended);
        Assert.Equal(Enumerable.Range(50, rest.Count), rest);
        await host.Service.ForeverCanceled.Task.WaitAsync(Patience);
        await AssertNewStreamsWorkAsync(host);
        Assert.Equal(2, host.Server.ConnectionsAccepted);
    }

    [Fact]
    public async Task ClientStream_WhenTheConnectionIsLost_FailsOnceWithConnectionException_StopsTheProducer_AndNewStreamsWorkAfterTheReconnect()
    {
        await using Host host = await Host.StartAsync();
        var producerStopped = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        var never = new TaskCompletionSource();
        Task call = host.Proxy.Drain(GatedNumbers(int.MaxValue, 500, never.Task, producerStopped));
        await Hosts.WaitUntilAsync(() => host.Service.DrainCount == 500, "the handler has read the items before the gate");

        host.CutConnections();

        Exception? ended = await EndOfAsync(call);
        AssertLost(host, ended);
        await producerStopped.Task.WaitAsync(Patience);
        Assert.IsAssignableFrom<OperationCanceledException>(await host.Service.DrainEnded.Task.WaitAsync(Patience));
        await AssertNewStreamsWorkAsync(host);
    }

    [Fact]
    public async Task Duplex_WhenTheConnectionIsLost_FailsOnceWithConnectionException_AndNewStreamsWorkAfterTheReconnect()
    {
        await using Host host = await Host.StartAsync();
        var never = new TaskCompletionSource();
        await using var echoes = new Reader<string>(host.Proxy.Echo("> ", GatedLines(int.MaxValue, 20, never.Task)));
        for (int i = 0; i < 20; i++)
        {
            Assert.True(await echoes.NextAsync());
            Assert.Equal($"> {i}", echoes.Current);
        }

        host.CutConnections();
        (List<string> rest, Exception? ended) = await echoes.ReadToEndAsync();

        AssertLost(host, ended);
        Assert.Empty(rest);
        await AssertNewStreamsWorkAsync(host);
    }

    [Fact]
    public async Task Streams_WhenTheServerIsKilledAndRestarted_FailOnce_AndNewStreamsWorkOnTheRestartedServer()
    {
        await using Host host = await Host.StartAsync();
        await using var server = new Reader<int>(host.Proxy.Forever());
        Assert.True(await server.NextAsync());
        var never = new TaskCompletionSource();
        Task client = host.Proxy.Drain(GatedNumbers(int.MaxValue, 5, never.Task));
        await Hosts.WaitUntilAsync(() => host.Service.DrainCount == 5, "the handler has read the client's first items");

        await host.Server.StopAsync(new CancellationToken(canceled: true)).WaitAsync(Patience);
        (_, Exception? serverEnded) = await server.ReadToEndAsync();
        Exception? clientEnded = await EndOfAsync(client);

        Assert.IsType<MuxConnectionException>(serverEnded);
        Assert.IsType<MuxConnectionException>(clientEnded);
        await Hosts.WaitUntilAsync(() => host.Client.State == MuxClientState.Reconnecting, "the client notices the lost connection");

        // A stream started while no server is up waits for the connection (within CallTimeout).
        Task<List<int>> waiting = ReadAllAsync(host.Proxy.Range(7, 3));
        await host.RestartAsync();
        Assert.Equal([7, 8, 9], await waiting.WaitAsync(Patience));
        await AssertNewStreamsWorkAsync(host);
        Assert.Equal(1, host.Server.ConnectionsAccepted);
    }

    [Fact]
    public async Task GoAwayBetweenTwoStreams_CompletesTheOneAtItsId_FailsTheOneAboveOnceAsNeverRun_AndANewStreamGoesToTheNextConnection()
    {
        // A hand-written server: the test decides that GoAway(k) arrives with a server stream at k
        // and a client stream above k in flight (a race a real server makes rarely).
        using var listener = new TcpListener(IPAddress.Loopback, 0);
        listener.Start();
        Task<MuxClient> connecting = MuxClient.ConnectAsync(listener.LocalEndpoint, new MuxClientOptions
        {
            ReconnectInitialDelay = TimeSpan.FromMilliseconds(20),
            ReconnectMaxDelay = TimeSpan.FromMilliseconds(200),
            CallTimeout = Patience,
        });
        await using RawMuxPeer first = await AcceptAsync(listener);
        await using MuxClient client = await connecting.WaitAsync(Patience);
        IStreamService proxy = client.CreateProxy<IStreamService>();

        await using var served = new Reader<int>(proxy.Range(0, 2));
        Task<bool> firstItem = served.StartNext();
        ReceivedFrame rangeRequest = await first.ExpectFrameAsync();
        Assert.Equal(FrameType.Request, rangeRequest.Type);

        var producerStopped = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        var never = new TaskCompletionSource();
        Task<long> notRun = proxy.Sum(GatedNumbers(int.MaxValue, 3, never.Task, producerStopped));
        ReceivedFrame sumRequest = await first.ExpectFrameAsync();
        Assert.Equal(FrameType.Request, sumRequest.Type);
        Assert.True(sumRequest.CallId > rangeRequest.CallId);

        await first.SendAsync(GoAway(rangeRequest.CallId));

        // Above GoAway's id: the server never ran it. The call fails once, says so, and its
        // producer stops; a stream is never sent again by itself (its items cannot be replayed).
        var refused = Assert.IsType<MuxConnectionException>(await EndOfAsync(notRun));
        Assert.Equal(MuxCloseReason.GoAway, refused.Reason);
        Assert.True(refused.IsSafeToRetry);
        Assert.Equal($"The Mux server at {listener.LocalEndpoint} is shutting down and did not run this call; it is safe to retry.", refused.Message);
        await producerStopped.Task.WaitAsync(Patience);

        // At GoAway's id: its items and its end still arrive, and it completes.
        await first.SendAsync(Concat(
            WriteRawFrame(FrameType.StreamItem, rangeRequest.CallId, MessagePackSerializer.Serialize(0)),
            WriteRawFrame(FrameType.StreamItem, rangeRequest.CallId, MessagePackSerializer.Serialize(1)),
            WriteRawFrame(FrameType.Response, rangeRequest.CallId, [0xc0])));
        Assert.True(await served.NextAsync(firstItem));
        Assert.Equal(0, served.Current);
        (List<int> rest, Exception? ended) = await served.ReadToEndAsync();
        Assert.Null(ended);
        Assert.Equal([1], rest);

        // Nothing is left on the first connection: the client ends it, and a new stream runs on the next.
        await first.AssertClosedByOtherSideAsync();
        Task<List<int>> next = ReadAllAsync(proxy.Range(5, 2));
        await using RawMuxPeer second = await AcceptAsync(listener);
        ReceivedFrame nextRequest = await second.ExpectFrameAsync();
        Assert.Equal(FrameType.Request, nextRequest.Type);
        Assert.Equal(rangeRequest.MethodId, nextRequest.MethodId);
        await second.SendAsync(Concat(
            WriteRawFrame(FrameType.StreamItem, nextRequest.CallId, MessagePackSerializer.Serialize(5)),
            WriteRawFrame(FrameType.StreamItem, nextRequest.CallId, MessagePackSerializer.Serialize(6)),
            WriteRawFrame(FrameType.Response, nextRequest.CallId, [0xc0])));
        Assert.Equal([5, 6], await next.WaitAsync(Patience));
        Assert.Equal(MuxClientState.Connected, client.State);
    }

    private static async Task<RawMuxPeer> AcceptAsync(TcpListener listener)
    {
        RawMuxPeer peer = await RawMuxPeer.AcceptAsync(listener);
        Assert.Equal(FrameType.Hello, (await peer.ExpectFrameAsync()).Type);
        await peer.SendAsync(FragmentWire.PlainHelloAck());
        return peer;
    }

    private static byte[] GoAway(uint lastServedCallId)
    {
        byte[] payload = new byte[ProtocolConstants.GoAwayPayloadSize];
        BinaryPrimitives.WriteUInt32LittleEndian(payload, lastServedCallId);
        return WriteRawFrame(FrameType.GoAway, 0, payload);
    }

    private static void AssertLost(Host host, Exception? ended)
    {
        var lost = Assert.IsType<MuxConnectionException>(ended);
        Assert.False(lost.IsSafeToRetry); // It ran: never sent again by itself.

        // The server's side closed the socket: this side sees the remote close (or, if the close
        // reset the socket, a transport error).
        Assert.Contains(lost.Reason, new[] { MuxCloseReason.RemoteClosed, MuxCloseReason.TransportError });
        Assert.StartsWith($"The Mux connection to {host.EndPoint} ", lost.Message, StringComparison.Ordinal);
    }
}
