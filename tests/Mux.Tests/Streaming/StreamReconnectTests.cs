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
        private Host(IPEndPoint endPoint, MuxClient client)
        {
            EndPoint = endPoint;
            Client = client;
        }

        public IPEndPoint EndPoint { get; }

        public MuxClient Client { get; }

        public MuxServer? Server { get; private set; }

        public StreamService Service { get; private set; } = null!;

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
            return new Host(endPoint, client) { Server = server, Service = service };
        }

        /// <summary>Starts a new server (with a new service) on the same port; the old one must be
        /// stopped or stopping (its listener closed).</summary>
        public async Task RestartAsync()
        {
            (MuxServer server, StreamService service) = await StartServerAsync(EndPoint);
            Server = server;
            Service = service;
        }

        /// <summary>Cuts every connection of the current server, as a failed network would; the
        /// server keeps listening, so the client reconnects to it.</summary>
        public void CutConnections()
        {
            foreach (Mux.Server.ServerConnection connection in Server!.Connections)
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
            Service.Gate.Set();
            await Client.DisposeAsync().AsTask().WaitAsync(Patience);
            if (Server is not null)
            {
                using var deadline = new CancellationTokenSource(Patience);
                await Server.StopAsync(deadline.Token).WaitAsync(Patience + Patience);
            }
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

    /// <summary>Starts a graceful stop (GoAway, then the calls in flight are served) and waits
    /// until the client has the GoAway; the returned task is the stop.</summary>
    private static async Task<Task> StartDrainAsync(Host host, CancellationToken drainToken)
    {
        Mux.Client.ClientConnection first = host.Client.Connection;
        Task stopping = host.Server!.StopAsync(drainToken);
        await Hosts.WaitUntilAsync(() => first.IsGoingAway, "the client has the server's GoAway");
        return stopping;
    }

    /// <summary>Reads <paramref name="stream"/> to its end and returns the items and how it ended
    /// (null: completed). Each MoveNextAsync is bounded, so a stream that hangs fails the test; one
    /// that ended says so from then on, without a second exception.</summary>
    private static async Task<(List<T> Items, Exception? Ended)> ReadToEndAsync<T>(IAsyncEnumerator<T> stream)
    {
        var items = new List<T>();
        Exception? ended = null;
        try
        {
            while (await NextAsync(stream, items.Count))
            {
                items.Add(stream.Current);
            }
        }
        catch (Exception ex) when (ex is not Xunit.Sdk.XunitException)
        {
            ended = ex;
        }

        Assert.False(await NextAsync(stream, items.Count), "The stream went on after it had ended.");
        return (items, ended);
    }

    private static async Task<bool> NextAsync<T>(IAsyncEnumerator<T> stream, int read)
    {
        Task<bool> next = stream.MoveNextAsync().AsTask();
        if (await Task.WhenAny(next, Task.Delay(Patience)) != next)
        {
            throw new Xunit.Sdk.XunitException($"The stream hung after {read} items.");
        }

        return await next;
    }

    /// <summary>All of <paramref name="stream"/>, each step bounded.</summary>
    private static async Task<List<T>> ReadAllAsync<T>(IAsyncEnumerable<T> stream)
    {
        await using IAsyncEnumerator<T> enumerator = stream.GetAsyncEnumerator();
        (List<T> items, Exception? ended) = await ReadToEndAsync(enumerator);
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
        await using IAsyncEnumerator<int> stream = host.Proxy.Gated(500).GetAsyncEnumerator();
        for (int i = 0; i < StreamService.GatedAt; i++)
        {
            Assert.True(await stream.MoveNextAsync().AsTask().WaitAsync(Patience));
            Assert.Equal(i, stream.Current);
        }

        using var drainToken = new CancellationTokenSource(Patience);
        Task stopping = await StartDrainAsync(host, drainToken.Token);
        await host.RestartAsync();
        await AssertNewStreamsWorkAsync(host);
        Assert.False(stopping.IsCompleted); // The first server still serves the stream.

        first.Gate.Set();
        (List<int> rest, Exception? ended) = await ReadToEndAsync(stream);

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
        await Hosts.WaitUntilAsync(() => host.Server!.Connections.Sum(c => c.RunningCalls) == 1, "the handler runs");

        // The client's items after the GoAway still reach the handler, which answers with their sum.
        using var drainToken = new CancellationTokenSource(Patience);
        Task stopping = await StartDrainAsync(host, drainToken.Token);
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
        await using IAsyncEnumerator<string> echoes = host.Proxy.Echo("> ", GatedLines(200, 10, gate.Task)).GetAsyncEnumerator();
        for (int i = 0; i < 10; i++)
        {
            Assert.True(await echoes.MoveNextAsync().AsTask().WaitAsync(Patience));
            Assert.Equal($"> {i}", echoes.Current);
        }

        using var drainToken = new CancellationTokenSource(Patience);
        Task stopping = await StartDrainAsync(host, drainToken.Token);
        gate.SetResult();
        (List<string> rest, Exception? ended) = await ReadToEndAsync(echoes);

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
        await using IAsyncEnumerator<int> stream = host.Proxy.Forever().GetAsyncEnumerator();
        Assert.True(await stream.MoveNextAsync().AsTask().WaitAsync(Patience));

        // The drain runs out of patience: the server closes the connection and cancels the producer.
        using var drainToken = new CancellationTokenSource();
        Task stopping = await StartDrainAsync(host, drainToken.Token);
        drainToken.Cancel();
        await stopping.WaitAsync(Patience);
        await first.ForeverCanceled.Task.WaitAsync(Patience);
        (List<int> rest, Exception? ended) = await ReadToEndAsync(stream);

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
        await Hosts.WaitUntilAsync(() => host.Server!.Connections.Sum(c => c.RunningCalls) == 1, "the handler runs");
        using var drainToken = new CancellationTokenSource();
        Task stopping = await StartDrainAsync(host, drainToken.Token);
        drainToken.Cancel();
        await stopping.WaitAsync(Patience);

        var lost = await Assert.ThrowsAsync<MuxConnectionException>(() => call.WaitAsync(Patience));
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
        await using IAsyncEnumerator<int> stream = host.Proxy.Forever().GetAsyncEnumerator();
        for (int i = 0; i < 50; i++)
        {
            Assert.True(await stream.MoveNextAsync().AsTask().WaitAsync(Patience));
            Assert.Equal(i, stream.Current);
        }

        host.CutConnections();
        (List<int> rest, Exception? ended) = await ReadToEndAsync(stream);

        AssertLost(host, ended);
        Assert.Equal(Enumerable.Range(50, rest.Count), rest);
        await host.Service.ForeverCanceled.Task.WaitAsync(Patience);
        await AssertNewStreamsWorkAsync(host);
        Assert.Equal(2, host.Server!.ConnectionsAccepted);
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

        Exception ended = await Assert.ThrowsAnyAsync<Exception>(() => call.WaitAsync(Patience));
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
        await using IAsyncEnumerator<string> echoes = host.Proxy.Echo("> ", GatedLines(int.MaxValue, 20, never.Task)).GetAsyncEnumerator();
        for (int i = 0; i < 20; i++)
        {
            Assert.True(await echoes.MoveNextAsync().AsTask().WaitAsync(Patience));
            Assert.Equal($"> {i}", echoes.Current);
        }

        host.CutConnections();
        (List<string> rest, Exception? ended) = await ReadToEndAsync(echoes);

        AssertLost(host, ended);
        Assert.Empty(rest);
        await AssertNewStreamsWorkAsync(host);
    }

    [Fact]
    public async Task Streams_WhenTheServerIsKilledAndRestarted_FailOnce_AndNewStreamsWorkOnTheRestartedServer()
    {
        await using Host host = await Host.StartAsync();
        await using IAsyncEnumerator<int> server = host.Proxy.Forever().GetAsyncEnumerator();
        Assert.True(await server.MoveNextAsync().AsTask().WaitAsync(Patience));
        var never = new TaskCompletionSource();
        Task client = host.Proxy.Drain(GatedNumbers(int.MaxValue, 5, never.Task));
        await Hosts.WaitUntilAsync(() => host.Service.DrainCount == 5, "the handler has read the client's first items");

        await host.Server!.StopAsync(new CancellationToken(canceled: true)).WaitAsync(Patience);
        (_, Exception? serverEnded) = await ReadToEndAsync(server);
        Exception clientEnded = await Assert.ThrowsAnyAsync<Exception>(() => client.WaitAsync(Patience));

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

        await using IAsyncEnumerator<int> served = proxy.Range(0, 2).GetAsyncEnumerator();
        Task<bool> firstItem = served.MoveNextAsync().AsTask();
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
        var refused = await Assert.ThrowsAsync<MuxConnectionException>(() => notRun.WaitAsync(Patience));
        Assert.Equal(MuxCloseReason.GoAway, refused.Reason);
        Assert.True(refused.IsSafeToRetry);
        Assert.Equal($"The Mux server at {listener.LocalEndpoint} is shutting down and did not run this call; it is safe to retry.", refused.Message);
        await producerStopped.Task.WaitAsync(Patience);

        // At GoAway's id: its items and its end still arrive, and it completes.
        await first.SendAsync(Concat(
            WriteRawFrame(FrameType.StreamItem, rangeRequest.CallId, MessagePackSerializer.Serialize(0)),
            WriteRawFrame(FrameType.StreamItem, rangeRequest.CallId, MessagePackSerializer.Serialize(1)),
            WriteRawFrame(FrameType.Response, rangeRequest.CallId, [0xc0])));
        Assert.True(await firstItem.WaitAsync(Patience));
        Assert.Equal(0, served.Current);
        (List<int> rest, Exception? ended) = await ReadToEndAsync(served);
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
