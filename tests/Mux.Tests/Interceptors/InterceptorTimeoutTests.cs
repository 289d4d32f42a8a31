using System.Net;
using System.Net.Sockets;
using Microsoft.Extensions.Time.Testing;
using Mux.Tests.Infrastructure;
using Mux.Tests.Protocol;
using Mux.Tests.Streaming;

namespace Mux.Tests.Interceptors;

/// <summary>
/// The timeout a client interceptor leaves on <see cref="MuxClientCall.Timeout"/> is the call's: the Request carries what
/// remains of it, the call times out then, and its message names it as the call's own unless it is still the client's
/// CallTimeout; a bound proxy's timeout stays the call's own through interceptors that leave it. A streaming call waits for a
/// connection within it. The unary calls run on a fake clock against a hand-written server, which reads each Request's deadline.
/// </summary>
public sealed class InterceptorTimeoutTests
{
    private static readonly TimeSpan CallTimeout = TimeSpan.FromSeconds(2);

    private const string OwnTimeout = "(its own Timeout: MuxCallOptions.Timeout, or MuxClientCall.Timeout as an interceptor set it).";

    [Fact]
    public async Task AnInterceptorThatShortensTheTimeout_SendsWhatRemainsOfIt_AndTheCallTimesOutThen_AsItsOwn()
    {
        var clock = new FakeTimeProvider();
        await using Connected connected = await Connected.StartAsync(clock, new SetsTimeout(TimeSpan.FromMilliseconds(500)));

        Task<int> call = connected.Client.CreateProxy<ITestService>().Add(1, 2).AsTask();
        ReceivedFrame request = await connected.Server.ExpectFrameAsync();
        Assert.Equal(500u, request.RemainingMilliseconds);

        clock.Advance(TimeSpan.FromMilliseconds(499));
        Assert.False(call.IsCompleted);
        clock.Advance(TimeSpan.FromMilliseconds(1));
        TimeoutException timeout = await Assert.ThrowsAsync<TimeoutException>(() => call.WaitAsync(TestHost.Patience));
        Assert.Equal($"The Mux call to ITestService.Add did not complete within 500 ms {OwnTimeout}", timeout.Message);
    }

    [Fact]
    public async Task ABoundProxysTimeout_ThatTheInterceptorsLeave_IsTheCallsOwn()
    {
        var clock = new FakeTimeProvider();
        await using Connected connected = await Connected.StartAsync(clock, new SetsTimeout(null));
        ITestService bound = connected.Client.CreateProxy<ITestService>(new MuxCallOptions { Timeout = TimeSpan.FromSeconds(1) });

        Task<int> call = bound.Add(1, 2).AsTask();
        ReceivedFrame request = await connected.Server.ExpectFrameAsync();
        Assert.Equal(1000u, request.RemainingMilliseconds);

        clock.Advance(TimeSpan.FromSeconds(1));
        TimeoutException timeout = await Assert.ThrowsAsync<TimeoutException>(() => call.WaitAsync(TestHost.Patience));
        Assert.Equal($"The Mux call to ITestService.Add did not complete within 1 s {OwnTimeout}", timeout.Message);
    }

    [Fact]
    public async Task AnInterceptorThatSetsTheClientsCallTimeout_LeavesItTheClients()
    {
        var clock = new FakeTimeProvider();
        await using Connected connected = await Connected.StartAsync(clock, new SetsTimeout(CallTimeout));

        Task<int> call = connected.Client.CreateProxy<ITestService>().Add(1, 2).AsTask();
        ReceivedFrame request = await connected.Server.ExpectFrameAsync();
        Assert.Equal(2000u, request.RemainingMilliseconds);

        clock.Advance(CallTimeout);
        TimeoutException timeout = await Assert.ThrowsAsync<TimeoutException>(() => call.WaitAsync(TestHost.Patience));
        Assert.Equal("The Mux call to ITestService.Add did not complete within 2 s (MuxClientOptions.CallTimeout).", timeout.Message);
    }

    [Fact]
    public async Task AStreamingCallWhoseInterceptorShortensTheTimeout_WaitsForAConnectionOnlyThatLong()
    {
        // Nobody answers the handshake: the stream waits for a connection, within 300 ms rather than the client's ten minutes.
        using TcpListener listener = RawMuxPeer.Listen();
        var options = new MuxClientOptions
        {
            EndPoint = listener.LocalEndpoint,
            CallTimeout = TimeSpan.FromMinutes(10),
            KeepAliveInterval = Timeout.InfiniteTimeSpan,
        };
        options.Interceptors.Add(new SetsTimeout(TimeSpan.FromMilliseconds(300)));
        await using MuxClient client = MuxClient.Create(options);
        await using RawMuxPeer server = await RawMuxPeer.AcceptAsync(listener);

        await using IAsyncEnumerator<int> stream = client.CreateProxy<IStreamService>().Range(0, 3).GetAsyncEnumerator();
        MuxConnectionException notSent =
            await Assert.ThrowsAsync<MuxConnectionException>(() => stream.MoveNextAsync().AsTask().WaitAsync(TestHost.Patience));
        Assert.Contains("was available within 300 ms (the call's own Timeout); the call was not sent.", notSent.Message);
        Assert.True(notSent.IsSafeToRetry);
    }

    /// <summary>Sets <see cref="MuxClientCall.Timeout"/> when given one; else leaves it.</summary>
    private sealed class SetsTimeout(TimeSpan? timeout) : IMuxClientInterceptor
    {
        public ValueTask InvokeAsync(MuxClientCall call, Func<ValueTask> next)
        {
            if (timeout is { } value)
            {
                call.Timeout = value;
            }

            return next();
        }
    }

    /// <summary>A client with one interceptor, connected to a hand-written server.</summary>
    private sealed class Connected(MuxClient client, RawMuxPeer server) : IAsyncDisposable
    {
        public MuxClient Client => client;

        public RawMuxPeer Server => server;

        public static async Task<Connected> StartAsync(TimeProvider clock, IMuxClientInterceptor interceptor)
        {
            using TcpListener listener = RawMuxPeer.Listen();
            var options = new MuxClientOptions
            {
                EndPoint = (IPEndPoint)listener.LocalEndpoint,
                TimeProvider = clock,
                CallTimeout = CallTimeout,
                KeepAliveInterval = Timeout.InfiniteTimeSpan,
            };
            options.Interceptors.Add(interceptor);
            Task<MuxClient> connecting = MuxClient.ConnectAsync(options);
            RawMuxPeer server = await RawMuxPeer.AcceptAsync(listener);
            await server.AnswerHelloAsync();
            return new Connected(await connecting.WaitAsync(TestHost.Patience), server);
        }

        // The server first: the client's graceful close waits (on the fake clock) for its peer to close.
        public async ValueTask DisposeAsync()
        {
            await server.DisposeAsync();
            await client.DisposeAsync().AsTask().WaitAsync(TestHost.Patience);
        }
    }
}
