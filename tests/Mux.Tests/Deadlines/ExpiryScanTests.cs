using System.Net.Sockets;
using MessagePack;
using MessagePack.Formatters;
using Microsoft.Extensions.Time.Testing;
using Mux.Protocol;
using Mux.Tests.Infrastructure;
using Mux.Tests.Protocol;

namespace Mux.Tests.Deadlines;

/// <summary>
/// The client's expiry scan, which fails calls past their deadline, against a hand-written server
/// that never answers (so only the client's own deadline can end a call) and a fake clock that
/// only the test moves.
/// </summary>
public sealed class ExpiryScanTests
{
    private static readonly TimeSpan CallTimeout = TimeSpan.FromSeconds(2);

    /// <summary>
    /// The scan started with the connection's first call that has a deadline, and first ran at that
    /// call's deadline: a call made after it with an earlier deadline (here the client's 2 s
    /// CallTimeout after a bound proxy's hour) was not failed until then, an hour late.
    /// </summary>
    [Fact]
    public async Task ACallWhoseDeadlineComesBeforeTheFirstCallsDeadline_TimesOutAtItsOwn()
    {
        var clock = new FakeTimeProvider();
        await using Server connection = await Server.OpenAsync(clock, maxConcurrentCalls: 100);
        (RawMuxPeer peer, MuxClient client) = (connection.Peer, connection.Client);

        Task<int> slow = client.CreateProxy<IRaceService>(new MuxCallOptions { Timeout = TimeSpan.FromHours(1) }).Respond(1, -1);
        Task<int> quick = client.CreateProxy<IRaceService>().Respond(2, -1);
        Assert.Equal(FrameType.Request, (await peer.ExpectFrameAsync()).Type);
        Assert.Equal(FrameType.Request, (await peer.ExpectFrameAsync()).Type);

        clock.Advance(CallTimeout + TimeSpan.FromSeconds(1));
        Exception? error = await Record.ExceptionAsync(() => quick.WaitAsync(TestHost.Patience));
        Assert.Equal("The Mux call to IRaceService.Respond did not complete within 2 s (MuxClientOptions.CallTimeout).", error?.Message);
        Assert.False(slow.IsCompleted, "The call with an hour to go ended.");
    }

    /// <summary>
    /// The scan may fail a call that is in the table while its Request is still being written; if
    /// the write then fails (its arguments cannot be serialized, or are over the server's limit),
    /// no Request went out and no answer will ever free the call's slot. The slot was left among
    /// the abandoned calls', one of the server's cap lost for good: here the only one.
    /// </summary>
    [Fact]
    public async Task ACallThatTimesOutWhileItsRequestIsWritten_AndIsThenNotSent_GivesItsSlotBack()
    {
        var clock = new FakeTimeProvider();
        await using Server connection = await Server.OpenAsync(clock, maxConcurrentCalls: 1);
        (RawMuxPeer peer, MuxClient client) = (connection.Peer, connection.Client);

        // The arguments' formatter waits, mid-write, while the test moves the clock past the call's
        // deadline (the scan then runs on the test's thread, not inside the write), then fails.
        using var writing = new SemaphoreSlim(0);
        using var expired = new SemaphoreSlim(0);
        var arguments = new ArgumentsThatFailToWrite(() =>
        {
            writing.Release();
            Assert.True(expired.Wait(TestHost.Patience));
        });
        Task<int> call = Task.Run(() => client.InvokeAsync<ArgumentsThatFailToWrite, int>(1, arguments).AsTask());
        Assert.True(await writing.WaitAsync(TestHost.Patience));
        clock.Advance(CallTimeout + TimeSpan.FromSeconds(1));
        expired.Release();

        await Assert.ThrowsAsync<TimeoutException>(() => call).WaitAsync(TestHost.Patience);
        Assert.Equal((1, 0), client.Connection.Outgoing.SlotAccount);

        // And the one slot carries the next call (after the scan's Cancel for the first).
        Task<int> next = client.CreateProxy<IRaceService>().Respond(7, 0);
        ReceivedFrame request;
        do
        {
            request = await peer.ExpectFrameAsync();
        }
        while (request.Type != FrameType.Request);

        await peer.SendAsync(ProtocolTestHelpers.WriteRawFrame(FrameType.Response, request.CallId, MessagePackSerializer.Serialize(7)));
        Assert.Equal(7, await next.WaitAsync(TestHost.Patience));
    }

    /// <summary>A client on <paramref name="clock"/> and the hand-written server it is connected to,
    /// which allows <paramref name="maxConcurrentCalls"/> calls at once.</summary>
    private sealed class Server(TcpListener listener, RawMuxPeer peer, MuxClient client) : IAsyncDisposable
    {
        public RawMuxPeer Peer => peer;

        public MuxClient Client => client;

        public static async Task<Server> OpenAsync(FakeTimeProvider clock, int maxConcurrentCalls)
        {
            TcpListener listener = RawMuxPeer.Listen();
            var options = new MuxClientOptions { TimeProvider = clock, CallTimeout = CallTimeout, KeepAliveInterval = Timeout.InfiniteTimeSpan, AutoReconnect = false };
            Task<MuxClient> connecting = MuxClient.ConnectAsync(listener.LocalEndpoint, options);
            RawMuxPeer peer = await RawMuxPeer.AcceptAsync(listener);
            await peer.AnswerHelloAsync(maxConcurrentCalls);
            return new Server(listener, peer, await connecting.WaitAsync(TestHost.Patience));
        }

        /// <summary>The server goes first: a client that closes gracefully waits for the answers
        /// to its calls, which this server never sends, on a clock that nobody moves.</summary>
        public async ValueTask DisposeAsync()
        {
            peer.Close();
            await client.DisposeAsync().AsTask().WaitAsync(TestHost.Patience);
            await peer.DisposeAsync();
            listener.Dispose();
        }
    }

    /// <summary>Arguments whose formatter runs <see cref="WhileWritten"/>, then fails.</summary>
    [MessagePackFormatter(typeof(Formatter))]
    public readonly struct ArgumentsThatFailToWrite(Action whileWritten)
    {
        public Action WhileWritten { get; } = whileWritten;

        public sealed class Formatter : IMessagePackFormatter<ArgumentsThatFailToWrite>
        {
            public void Serialize(ref MessagePackWriter writer, ArgumentsThatFailToWrite value, MessagePackSerializerOptions options)
            {
                value.WhileWritten();
                throw new InvalidOperationException("These arguments cannot be written.");
            }

            public ArgumentsThatFailToWrite Deserialize(ref MessagePackReader reader, MessagePackSerializerOptions options) =>
                throw new NotSupportedException("Only ever written.");
        }
    }
}
