using System.Net.Sockets;
using MessagePack;
using MessagePack.Formatters;
using Microsoft.Extensions.Time.Testing;
using Mux.Protocol;
using Mux.Tests.Infrastructure;
using Mux.Tests.Protocol;

namespace Mux.Tests.Races;

/// <summary>
/// The expiry scan against a call whose Request is still being written: the call is in the
/// pending table (so that its answer can find it) before its Request is queued, and the scan may
/// fail it in between. It tells the peer with a Cancel; sent at once, that Cancel reached the wire
/// before the Request, the peer dropped it (no such call yet), then ran the Request with nothing to
/// cancel it: a server's call to its client carries no deadline, so its handler ran on for good,
/// holding a slot of the cap on both sides.
/// </summary>
public sealed class ExpiryRacingRequestTests
{
    private static readonly TimeSpan CallTimeout = TimeSpan.FromSeconds(2);

    [Fact]
    public async Task ACallThatTimesOutWhileItsRequestIsWritten_SendsItsCancelAfterItsRequest()
    {
        var clock = new FakeTimeProvider();
        using TcpListener listener = RawMuxPeer.Listen();
        var options = new MuxClientOptions { TimeProvider = clock, CallTimeout = CallTimeout, KeepAliveInterval = Timeout.InfiniteTimeSpan, AutoReconnect = false };
        Task<MuxClient> connecting = MuxClient.ConnectAsync(listener.LocalEndpoint, options);
        await using RawMuxPeer peer = await RawMuxPeer.AcceptAsync(listener);
        await peer.AnswerHelloAsync(maxConcurrentCalls: 1);
        MuxClient client = await connecting.WaitAsync(TestHost.Patience);
        try
        {
            // The arguments' formatter waits, mid-write, while the test moves the clock past the call's
            // deadline: the scan runs on the test's thread and fails the call; then the write goes on.
            using var writing = new SemaphoreSlim(0);
            using var expired = new SemaphoreSlim(0);
            var arguments = new ArgumentsWrittenSlowly(() =>
            {
                writing.Release();
                Assert.True(expired.Wait(TestHost.Patience));
            });
            Task<int> call = Task.Run(() => client.InvokeAsync<ArgumentsWrittenSlowly, int>(1, arguments).AsTask());
            Assert.True(await writing.WaitAsync(TestHost.Patience), "The call's arguments were never written.");
            clock.Advance(CallTimeout + TimeSpan.FromSeconds(1));
            expired.Release();

            TimeoutException timedOut = await Assert.ThrowsAsync<TimeoutException>(() => call).WaitAsync(TestHost.Patience);
            Assert.Equal("The Mux call to method 0x00000001 did not complete within 2 s (MuxClientOptions.CallTimeout).", timedOut.Message);

            // The peer sees the Request, then its Cancel: a peer drops a Cancel for a call it has not seen.
            ReceivedFrame first = await peer.ExpectFrameAsync();
            ReceivedFrame second = await peer.ExpectFrameAsync();
            Assert.Equal((FrameType.Request, FrameType.Cancel), (first.Type, second.Type));
            Assert.Equal(first.CallId, second.CallId);

            // The peer answers the cancelled call, which frees its slot: the cap is whole again.
            await peer.SendAsync(ProtocolTestHelpers.WriteRawFrame(FrameType.Response, first.CallId, MessagePackSerializer.Serialize(0)));
            await Hosts.WaitUntilAsync(() => client.Connection.Outgoing.SlotAccount == (1, 0), "the cancelled call's answer to free its slot");
        }
        finally
        {
            // The peer goes first: a client that closes gracefully waits for the answers to its calls.
            peer.Close();
            await client.DisposeAsync().AsTask().WaitAsync(TestHost.Patience);
        }
    }

    /// <summary>Arguments whose formatter runs <see cref="WhileWritten"/>, then writes an empty array.</summary>
    [MessagePackFormatter(typeof(Formatter))]
    public readonly struct ArgumentsWrittenSlowly(Action whileWritten)
    {
        public Action WhileWritten { get; } = whileWritten;

        public sealed class Formatter : IMessagePackFormatter<ArgumentsWrittenSlowly>
        {
            public void Serialize(ref MessagePackWriter writer, ArgumentsWrittenSlowly value, MessagePackSerializerOptions options)
            {
                value.WhileWritten();
                writer.WriteArrayHeader(0);
            }

            public ArgumentsWrittenSlowly Deserialize(ref MessagePackReader reader, MessagePackSerializerOptions options) =>
                throw new NotSupportedException("Only ever written.");
        }
    }
}
