using System.Net;
using System.Net.Sockets;
using Mux.Client;
using Mux.Protocol;
using Mux.Tests.Infrastructure;

namespace Mux.Tests.Client;

/// <summary>
/// What a client's calls meet when its dispose runs alongside them: once the client is
/// closing for good, a call fails as closed (never as "not sent, safe to retry", which would have a
/// caller that retries on <see cref="MuxConnectionException.IsSafeToRetry"/> retry on a client that
/// will send nothing again), and it fails once.
/// </summary>
public sealed class DisposingClientRaceTests
{
    /// <summary>
    /// The server allows one call at a time: a second call waits for the first one's slot, unsent,
    /// when the client is disposed. The dispose closes the connection, which failed that call as
    /// never sent, safe to send again elsewhere: on a reconnecting client the resend of a call that
    /// does not wait for a connection looked only at the connection it had (closed, or none) and
    /// rethrew that; a client that does not reconnect (AutoReconnect off) has no resend path at
    /// all, so any call failed so. Every other path of a closing client says it is closed.
    /// </summary>
    [Theory]
    [InlineData(false, false, true, false)]
    [InlineData(false, true, true, false)]
    [InlineData(true, false, true, false)]
    [InlineData(true, true, true, false)]
    [InlineData(false, false, false, false)]
    [InlineData(false, true, false, false)]
    [InlineData(true, false, false, false)]
    [InlineData(true, true, false, false)]
    [InlineData(false, false, false, true)]
    [InlineData(true, true, false, true)]
    public async Task ACallLeftUnsentByTheDisposesClose_FailsAsClosed_NotSafeToRetry(bool balanced, bool withResult, bool autoReconnect, bool waitsForConnection)
    {
        await using DisposingClientScene scene = await DisposingClientScene.StartAsync(balanced, maxConcurrentCalls: 1, autoReconnect: autoReconnect);
        ITestService proxy = scene.Client.CreateProxy<ITestService>(new MuxCallOptions { WaitForConnection = waitsForConnection });

        // The first call takes the one slot (the server never answers it); the second waits for it.
        Task<int> first = proxy.Add(1, 2).AsTask();
        Assert.Equal(FrameType.Request, (await scene.Server.ExpectFrameAsync()).Type);
        Task second = withResult ? proxy.Add(3, 4).AsTask() : proxy.Throw("never sent");
        Assert.False(second.IsCompleted);

        ValueTask dispose = scene.Client.DisposeAsync();
        await DisposingClientScene.AssertFailsAsClosedAsync(second);

        // The first call was sent: the close fails it as it fails any call in flight.
        MuxConnectionException inFlight = await Assert.ThrowsAsync<MuxConnectionException>(() => first.WaitAsync(TestHost.Patience));
        Assert.False(inFlight.IsSafeToRetry, inFlight.Message);

        // Nothing of the second call ever reached the server.
        while (await scene.Server.ReceiveFrameAsync().WaitAsync(TestHost.Patience) is { } frame)
        {
            Assert.NotEqual(FrameType.Request, frame.Type);
        }

        scene.Server.Dispose();
        await dispose.AsTask().WaitAsync(TestHost.Patience);
    }

    /// <summary>
    /// A balanced client disposed while an instance its resolver dropped is still closing (its
    /// server has not answered the close) is Closed only once that connection has closed too, as a
    /// client's own connections are: the dispose waited for the instances in the set and those still
    /// draining, but not for one whose drain had ended and whose close had begun, so the client could
    /// report itself closed while that connection still waited for its server (up to the close's
    /// drain, then the socket's own close).
    /// </summary>
    [Fact]
    public async Task ABalancedClientDisposedWhileADroppedInstanceCloses_IsClosedOnlyOnceThatConnectionHasClosed()
    {
        using TcpListener dropped = RawMuxPeer.Listen();
        using TcpListener kept = RawMuxPeer.Listen();
        var resolver = new SwitchingResolver(dropped.LocalEndpoint);
        Task<MuxClient> connecting = MuxClient.ConnectAsync(new MuxClientOptions { EndPointResolver = resolver, KeepAliveInterval = Timeout.InfiniteTimeSpan });
        RawMuxPeer first = await RawMuxPeer.AcceptAsync(dropped).WaitAsync(TestHost.Patience);
        RawMuxPeer? second = null;
        MuxClient? client = null;
        try
        {
            await first.AnswerHelloAsync();
            client = await connecting.WaitAsync(TestHost.Patience);
            ClientConnection droppedConnection = client.Connection;
            bool? droppedClosedWhenClientClosed = null;
            client.StateChanged += (_, change) =>
            {
                if (change.State == MuxClientState.Closed)
                {
                    droppedClosedWhenClientClosed = droppedConnection.Completion.IsCompleted;
                }
            };

            // The resolver now names only the other instance: the first, with no call pending, is
            // closed at once, and waits for its server (which never answers) to end its side.
            resolver.SwitchTo(kept.LocalEndpoint);
            second = await RawMuxPeer.AcceptAsync(kept).WaitAsync(TestHost.Patience);
            await second.AnswerHelloAsync();
            Assert.Null(await first.ReceiveFrameAsync().WaitAsync(TestHost.Patience));

            // The kept instance answers the client's close at once.
            ValueTask dispose = client.DisposeAsync();
            Assert.Null(await second.ReceiveFrameAsync().WaitAsync(TestHost.Patience));
            second.Dispose();

            await dispose.AsTask().WaitAsync(TestHost.Patience);
            Assert.True(droppedConnection.Completion.IsCompleted);
            Assert.True(droppedClosedWhenClientClosed);
        }
        finally
        {
            first.Dispose();
            second?.Dispose();
            if (client is not null)
            {
                await client.DisposeAsync().AsTask().WaitAsync(TestHost.Patience);
            }
        }
    }

    /// <summary>Names one endpoint, until told to name another (a change it signals at once).</summary>
    private sealed class SwitchingResolver(EndPoint endPoint) : IMuxEndPointResolver
    {
        private readonly TaskCompletionSource _changed = new(TaskCreationOptions.RunContinuationsAsynchronously);
        private volatile EndPoint _endPoint = endPoint;

        public void SwitchTo(EndPoint next)
        {
            _endPoint = next;
            _changed.TrySetResult();
        }

        public ValueTask<IReadOnlyList<EndPoint>> ResolveAsync(CancellationToken cancellationToken) => new([_endPoint]);

        public ValueTask WaitForChangeAsync(CancellationToken cancellationToken) => new(_changed.Task.WaitAsync(cancellationToken));
    }
}
