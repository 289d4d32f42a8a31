using Microsoft.Extensions.Time.Testing;
using Mux.Tests.Infrastructure;
using Mux.Tests.Pipeline;
using Mux.Tests.Protocol;

namespace Mux.Tests.Client;

/// <summary>
/// A client that cannot reconnect (over a transport it was given, or with AutoReconnect off) and
/// has closed for good fails every later call as closed, not as "not sent, safe to retry": a
/// caller that retries on <see cref="MuxConnectionException.IsSafeToRetry"/> would otherwise retry
/// forever on a client that will never send anything again (a reconnecting client already failed
/// such calls as closed).
/// </summary>
public sealed class ClosedClientTests
{
    [Theory]
    [InlineData(TransportKind.InMemory)]
    [InlineData(TransportKind.Tcp)]
    public async Task ADisposedClientThatCannotReconnect_FailsLaterCallsAsClosed_NotSafeToRetry(TransportKind kind)
    {
        // Over TCP the client is given AutoReconnect off; in memory it cannot reconnect anyway.
        PipelineHost host = await PipelineHost.StartAsync(kind, clientOptions: new MuxClientOptions { AutoReconnect = false });
        await using (host)
        {
            IPipelineService failsFast = host.Client.CreateProxy<IPipelineService>(new MuxCallOptions { WaitForConnection = false });
            Assert.Equal(3, await host.Proxy.Add(1, 2).AsTask().WaitAsync(TestHost.Patience));
            await host.Client.DisposeAsync();

            MuxConnectionException waits = await Assert.ThrowsAsync<MuxConnectionException>(() => host.Proxy.Add(1, 2).AsTask().WaitAsync(TestHost.Patience));
            MuxConnectionException doesNotWait = await Assert.ThrowsAsync<MuxConnectionException>(() => failsFast.Add(1, 2).AsTask().WaitAsync(TestHost.Patience));
            MuxConnectionException stream = await Assert.ThrowsAsync<MuxConnectionException>(async () =>
            {
                await foreach (int item in host.Proxy.Count(1).WithCancellation(new CancellationTokenSource(TestHost.Patience).Token))
                {
                }
            });

            foreach (MuxConnectionException failed in new[] { waits, doesNotWait, stream })
            {
                Assert.False(failed.IsSafeToRetry, failed.Message);
                Assert.Equal(MuxCloseReason.LocalShutdown, failed.Reason);
                Assert.EndsWith(" is closed.", failed.Message, StringComparison.Ordinal);
            }
        }
    }

    public enum Shape
    {
        Unary,
        UnaryWithoutResult,
        ServerStream,
        ClientStream,
    }

    /// <summary>
    /// A reconnecting client (over one endpoint, or over several instances) that has been disposed
    /// fails every call as closed, not safe to retry, also a call whose deadline has passed by the
    /// time it looks for a connection (an interceptor held it past CallTimeout): before, a unary call
    /// on the single-endpoint client was told no connection came in time, safe to retry.
    /// </summary>
    [Theory]
    [InlineData(false, Shape.Unary)]
    [InlineData(false, Shape.UnaryWithoutResult)]
    [InlineData(false, Shape.ServerStream)]
    [InlineData(false, Shape.ClientStream)]
    [InlineData(true, Shape.Unary)]
    [InlineData(true, Shape.UnaryWithoutResult)]
    [InlineData(true, Shape.ServerStream)]
    [InlineData(true, Shape.ClientStream)]
    public async Task ADisposedReconnectingClient_FailsEveryCallAsClosed_EvenOneWhoseDeadlinePassedBeforeItLooked(bool balanced, Shape shape)
    {
        PipelineHost host = await PipelineHost.StartAsync(TransportKind.Tcp);
        await using (host)
        {
            // The clock moves only when the interceptor moves it: past the deadline of the call it holds.
            var clock = new FakeTimeProvider();
            var options = new MuxClientOptions
            {
                TimeProvider = clock,
                CallTimeout = TimeSpan.FromSeconds(30),
                KeepAliveInterval = Timeout.InfiniteTimeSpan,
                Interceptors = { new LateInterceptor(clock, TimeSpan.FromSeconds(31)) },
            };
            if (balanced)
            {
                options.EndPoints.Add(host.Server.LocalEndPoint!);
            }

            MuxClient client = balanced
                ? await MuxClient.ConnectAsync(options).WaitAsync(TestHost.Patience)
                : await host.ConnectAnotherClientAsync(options);
            await client.DisposeAsync().AsTask().WaitAsync(TestHost.Patience);
            IPipelineService proxy = client.CreateProxy<IPipelineService>();

            MuxConnectionException failed = await Assert.ThrowsAsync<MuxConnectionException>(() => CallAsync(proxy, shape).WaitAsync(TestHost.Patience));
            Assert.False(failed.IsSafeToRetry, failed.Message);
            Assert.Equal(MuxCloseReason.LocalShutdown, failed.Reason);
            Assert.EndsWith(" is closed.", failed.Message, StringComparison.Ordinal);
        }
    }

    /// <summary>
    /// While a dispose waits for its server to answer the close (it never does here: the clock is
    /// fake and the drain's wait never ends), the client is closing for good: a call that does not
    /// wait for a connection fails as closed, as one that waits does, not as "no connection right
    /// now, safe to retry", which would have its caller retry until the dispose ended.
    /// </summary>
    [Theory]
    [InlineData(false)]
    [InlineData(true)]
    public async Task WhileADisposeWaitsForItsServer_ACallThatDoesNotWait_FailsAsClosed_NotSafeToRetry(bool balanced)
    {
        await using DisposingClientScene scene = await DisposingClientScene.StartAsync(balanced);
        ITestService failsFast = scene.Client.CreateProxy<ITestService>(new MuxCallOptions { WaitForConnection = false });
        ITestService waits = scene.Client.CreateProxy<ITestService>();

        // The client's close has reached its server (its end of the stream), which does not answer it.
        ValueTask dispose = scene.Client.DisposeAsync();
        while (await scene.Server.ReceiveFrameAsync().WaitAsync(TestHost.Patience) is not null)
        {
        }

        Assert.NotEqual(MuxClientState.Closed, scene.Client.State);
        await DisposingClientScene.AssertFailsAsClosedAsync(failsFast.Add(1, 2).AsTask());
        await DisposingClientScene.AssertFailsAsClosedAsync(waits.Add(1, 2).AsTask());

        scene.Server.Dispose();
        await dispose.AsTask().WaitAsync(TestHost.Patience);
    }

    private static async Task CallAsync(IPipelineService proxy, Shape shape)
    {
        switch (shape)
        {
            case Shape.Unary:
                await proxy.Add(1, 2);
                break;
            case Shape.UnaryWithoutResult:
                await proxy.Fail("never sent");
                break;
            case Shape.ServerStream:
                await foreach (int item in proxy.Count(1))
                {
                }

                break;
            default:
                await proxy.Sum(new[] { 1, 2 }.ToAsyncEnumerable());
                break;
        }
    }

    /// <summary>Moves the clock by <paramref name="late"/> before it lets each call go.</summary>
    private sealed class LateInterceptor(FakeTimeProvider clock, TimeSpan late) : IMuxClientInterceptor
    {
        public ValueTask InvokeAsync(MuxClientCall call, Func<ValueTask> next)
        {
            clock.Advance(late);
            return next();
        }
    }
}
