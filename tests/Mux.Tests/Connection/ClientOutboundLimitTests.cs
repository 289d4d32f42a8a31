using System.Net;
using System.Net.Sockets;
using Mux.Protocol;
using Mux.Tests.Infrastructure;
using Mux.Tests.Protocol;
using static Mux.Tests.Protocol.ProtocolTestHelpers;

namespace Mux.Tests.Connection;

/// <summary>MuxClientOptions.MaxOutboundBytesPerConnection: callers of a server that does not read
/// wait for room on the client instead of growing its outbound buffer without end; a waiting caller
/// can give up (cancellation, CallTimeout) and sends nothing; once the server reads, every call
/// completes exactly once.</summary>
public class ClientOutboundLimitTests
{
    private const int Cap = 64 * 1024;
    private const int TextSize = 16 * 1024;

    // Sends ~9.6 MB: more than the client's socket send buffer (at most 4 MiB here), the
    // transport's pipe (1 MiB) and the cap together, so the queue fills and callers must wait.
    private const int Calls = 600;

    // A request frame carrying TextSize characters, with room for its header and MessagePack framing.
    private const int MaxFrameBytes = TextSize + 64;

    // The most the queue may hold. A caller that finds room adds its whole request, so the queue may
    // pass the cap by one request per caller that finds room at the same moment (as the option's
    // documentation says). Here two can: this test's thread issuing calls on the fast path, and the
    // one waiter the client's room gate lets through when the writer frees room (a CI run saw the
    // queue 26 bytes past cap plus one request).
    private const int MaxQueuedBytes = Cap + (2 * MaxFrameBytes);

    [Fact]
    public async Task CallersOfAServerThatDoesNotRead_WaitOnTheClient_WithTheQueueBounded_AndAllCompleteOnceWhenItReads()
    {
        await using Stuck stuck = await Stuck.StartAsync(Timeout.InfiniteTimeSpan);
        string text = new('x', TextSize);
        List<Task<string>> calls = [.. Enumerable.Range(0, Calls).Select(_ => stuck.Proxy.Echo(text))];
        await stuck.WaitUntilFullAsync();
        Assert.True(stuck.Connection.Outbound.QueuedBytes <= MaxQueuedBytes, $"{stuck.Connection.Outbound.QueuedBytes} bytes queued, over the cap of {Cap} plus two requests.");
        Assert.True(stuck.Connection.PendingCallCount < Calls, "Every call was queued or sent: none waited for room.");

        // Callers that arrive now wait; the ones that give up fail at once and send nothing.
        // Their text differs, so the server can tell their requests apart: the kernel's send buffer
        // grows by itself, so now and then room opens and one is sent before it gives up.
        using var giveUp = new CancellationTokenSource();
        string abandonedText = new('y', TextSize);
        List<Task<string>> abandoned = [.. Enumerable.Range(0, 5).Select(_ => stuck.Proxy.Echo(abandonedText, giveUp.Token))];
        Assert.All(abandoned, a => Assert.False(a.IsCompleted));
        await giveUp.CancelAsync();
        foreach (Task<string> call in abandoned)
        {
            await Assert.ThrowsAnyAsync<OperationCanceledException>(() => call.WaitAsync(TestHost.Patience));
        }

        Assert.True(stuck.Connection.Outbound.QueuedBytes <= MaxQueuedBytes);
        Assert.All(calls, c => Assert.False(c.IsCompleted));

        // The server reads and answers everything: each of the calls completes once. An abandoned
        // call that was still waiting for room sent nothing; one that room had reached sent its
        // request and then a Cancel, and no more.
        var seen = new HashSet<uint>();
        var abandonedSent = new HashSet<uint>();
        int cancels = 0;
        while (seen.Count < Calls)
        {
            ReceivedFrame frame = await stuck.Server.ExpectFrameAsync();
            if (frame.Type == FrameType.Cancel)
            {
                Assert.Contains(frame.CallId, abandonedSent);
                cancels++;
                continue;
            }

            Assert.Equal(FrameType.Request, frame.Type);
            if (frame.Payload.AsSpan().IndexOf("yyyyyyyyyyyyyyyy"u8) >= 0)
            {
                Assert.True(abandonedSent.Add(frame.CallId), $"Abandoned call id {frame.CallId} arrived twice.");
                continue;
            }

            Assert.True(seen.Add(frame.CallId), $"Call id {frame.CallId} arrived twice.");
            await stuck.Server.SendAsync(WriteFrame(FrameType.Response, frame.CallId, 0, new RawBody(MessagePack.MessagePackSerializer.Serialize("ok"))));
        }

        string[] results = await Task.WhenAll(calls).WaitAsync(TestHost.Patience);
        Assert.All(results, r => Assert.Equal("ok", r));
        Assert.Equal(0, stuck.Connection.PendingCallCount);
        Assert.True(cancels <= abandonedSent.Count, $"{cancels} Cancel frames for {abandonedSent.Count} abandoned requests sent.");

        // Hello and the requests, plus at most a request and a Cancel for each abandoned call.
        Assert.InRange(stuck.Client.GetStatistics().FramesSent, 1 + Calls, 1 + Calls + (2 * abandoned.Count));
        Assert.Equal("ok", await SendOneMoreAsync(stuck, text));
    }

    [Fact]
    public async Task ACallerWaitingForRoom_TimesOutWithinItsCallTimeout_SayingWhy()
    {
        await using Stuck stuck = await Stuck.StartAsync(TimeSpan.FromSeconds(2));
        string text = new('x', TextSize);
        List<Task<string>> calls = [.. Enumerable.Range(0, Calls).Select(_ => stuck.Proxy.Echo(text))];
        await stuck.WaitUntilFullAsync();

        calls.Add(stuck.Proxy.Echo(text));

        // Every call ends with its CallTimeout: those queued or sent time out waiting for answers,
        // those still waiting for room say that they were. Which of the two a given call is
        // depends on how much the kernel's send buffer took meanwhile (it grows on its own), but
        // 9.6 MB cannot all fit, so some callers must have waited for room: nothing hangs.
        var timedOut = new List<TimeoutException>();
        foreach (Task<string> call in calls)
        {
            timedOut.Add(await Assert.ThrowsAsync<TimeoutException>(() => call.WaitAsync(TestHost.Patience)));
        }

        Assert.All(timedOut, e => Assert.Contains("ITestService.Echo", e.Message, StringComparison.Ordinal));
        Assert.Contains(timedOut, e => e.Message.Contains("MaxOutboundBytesPerConnection", StringComparison.Ordinal));
        Assert.True(stuck.Connection.Outbound.QueuedBytes <= MaxQueuedBytes);
    }

    [Fact]
    public async Task MaxOutboundBytesPerConnection_BelowOnePage_IsRefusedWithHowToFixIt()
    {
        InvalidOperationException error = await Assert.ThrowsAsync<InvalidOperationException>(() =>
            MuxClient.ConnectAsync(new IPEndPoint(IPAddress.Loopback, 1), new MuxClientOptions { MaxOutboundBytesPerConnection = 100 }));
        Assert.Contains("MuxClientOptions.MaxOutboundBytesPerConnection is 100", error.Message, StringComparison.Ordinal);
        Assert.Contains("at least 4096", error.Message, StringComparison.Ordinal);
    }

    private static async Task<string> SendOneMoreAsync(Stuck stuck, string text)
    {
        Task<string> call = stuck.Proxy.Echo(text);
        ReceivedFrame request = await stuck.Server.ExpectFrameAsync();
        await stuck.Server.SendAsync(WriteFrame(FrameType.Response, request.CallId, 0, new RawBody(MessagePack.MessagePackSerializer.Serialize("ok"))));
        return await call.WaitAsync(TestHost.Patience);
    }

    /// <summary>A Mux client connected to a raw server that answers the handshake and then does
    /// not read its socket until the test reads frames from it.</summary>
    private sealed class Stuck : IAsyncDisposable
    {
        private readonly TcpListener _listener;

        private Stuck(TcpListener listener, RawMuxPeer server, MuxClient client)
        {
            _listener = listener;
            Server = server;
            Client = client;
            Proxy = client.CreateProxy<ITestService>();
        }

        public RawMuxPeer Server { get; }

        public MuxClient Client { get; }

        public ITestService Proxy { get; }

        public Mux.Client.ClientConnection Connection => Client.Connection;

        public static async Task<Stuck> StartAsync(TimeSpan callTimeout)
        {
            var listener = new TcpListener(IPAddress.Loopback, 0);
            listener.Server.ReceiveBufferSize = 4096; // Inherited by the accepted socket: the kernel holds little.
            listener.Start();
            Task<MuxClient> connecting = MuxClient.ConnectAsync(listener.LocalEndpoint, new MuxClientOptions
            {
                AutoReconnect = false,
                CallTimeout = callTimeout,
                KeepAliveInterval = Timeout.InfiniteTimeSpan,
                MaxOutboundBytesPerConnection = Cap,
            });
            RawMuxPeer server = await RawMuxPeer.AcceptAsync(listener);
            await server.AnswerHelloAsync();
            return new Stuck(listener, server, await connecting.WaitAsync(TestHost.Patience));
        }

        /// <summary>Waits until the client's queue has reached the cap: the socket and the pipe
        /// behind it are full.</summary>
        public Task WaitUntilFullAsync() =>
            Hosts.WaitUntilAsync(() => Connection.Outbound.QueuedBytes >= Cap, "the client's outbound queue to reach its cap");

        public async ValueTask DisposeAsync()
        {
            await Client.DisposeAsync().AsTask().WaitAsync(TestHost.Patience);
            await Server.DisposeAsync();
            _listener.Dispose();
        }
    }
}
