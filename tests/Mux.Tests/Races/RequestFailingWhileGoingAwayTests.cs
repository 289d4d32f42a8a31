using System.Net.Sockets;
using MessagePack;
using MessagePack.Formatters;
using Mux.Tests.Infrastructure;

namespace Mux.Tests.Races;

/// <summary>
/// A call whose Request fails to encode after the connection started going away, past the check that
/// would have taken it back unsent: it takes itself out of the pending table, and when it was the last
/// call there, nobody else will see the drain end. A GoAway drain then never closed the client's
/// connection (it stayed open until the server closed it), and a stop (a balanced client dropping the
/// instance) waited until the client's dispose.
/// </summary>
public sealed class RequestFailingWhileGoingAwayTests
{
    [Fact]
    public async Task TheLastCallFailingToEncodeAfterGoAway_EndsTheDrain_AndTheClientClosesItsConnection()
    {
        await using Scene scene = await Scene.StartAsync();

        // The server promises to serve every id, so its GoAway leaves the call to take itself back.
        Task<int> call = scene.StartCallHeldInItsArguments();
        await scene.HeldAsync();
        await scene.Peer.SendAsync(RawServerFrames.GoAway(uint.MaxValue));
        await Hosts.WaitUntilAsync(() => scene.Client.Connection.Outgoing.IsGoingAway, "the client to read the GoAway");
        await scene.FailTheArgumentsAsync(call);

        await scene.Peer.AssertClosedByOtherSideAsync();
    }

    [Fact]
    public async Task TheLastCallFailingToEncodeAfterStopSending_EndsTheStop()
    {
        await using Scene scene = await Scene.StartAsync();

        Task<int> call = scene.StartCallHeldInItsArguments();
        await scene.HeldAsync();
        Task stopped = scene.Client.Connection.Outgoing.StopSending();
        Assert.False(stopped.IsCompleted, "The stop ended while a call was still in the table.");
        await scene.FailTheArgumentsAsync(call);

        await Hosts.WaitUntilAsync(() => stopped.IsCompleted, "the stop to end once its last call took itself back");
    }

    /// <summary>A client connected to a raw peer, and a call whose arguments' formatter waits, then throws.</summary>
    private sealed class Scene : IAsyncDisposable
    {
        private readonly SemaphoreSlim _writing = new(0);
        private readonly SemaphoreSlim _fail = new(0);

        private Scene(RawMuxPeer peer, MuxClient client)
        {
            Peer = peer;
            Client = client;
        }

        public RawMuxPeer Peer { get; }

        public MuxClient Client { get; }

        public static async Task<Scene> StartAsync()
        {
            using TcpListener listener = RawMuxPeer.Listen();
            var options = new MuxClientOptions { KeepAliveInterval = Timeout.InfiniteTimeSpan, AutoReconnect = false };
            Task<MuxClient> connecting = MuxClient.ConnectAsync(listener.LocalEndpoint, options);
            RawMuxPeer peer = await RawMuxPeer.AcceptAsync(listener);
            await peer.AnswerHelloAsync();
            return new Scene(peer, await connecting.WaitAsync(TestHost.Patience));
        }

        public Task<int> StartCallHeldInItsArguments()
        {
            var arguments = new ArgumentsThatFailToEncode(() =>
            {
                _writing.Release();
                Assert.True(_fail.Wait(TestHost.Patience));
            });
            return Task.Run(() => Client.InvokeAsync<ArgumentsThatFailToEncode, int>(1, arguments).AsTask());
        }

        public async Task HeldAsync() =>
            Assert.True(await _writing.WaitAsync(TestHost.Patience), "The call's arguments were never written.");

        public async Task FailTheArgumentsAsync(Task<int> call)
        {
            _fail.Release();
            MessagePackSerializationException failed = await Assert.ThrowsAsync<MessagePackSerializationException>(() => call).WaitAsync(TestHost.Patience);
            Assert.Contains("These arguments cannot be written.", failed.ToString());
            Assert.Equal(0, Client.Connection.Outgoing.Count);
        }

        public async ValueTask DisposeAsync()
        {
            Peer.Close();
            await Client.DisposeAsync().AsTask().WaitAsync(TestHost.Patience);
            await Peer.DisposeAsync();
            _writing.Dispose();
            _fail.Dispose();
        }
    }

    /// <summary>Arguments whose formatter runs <see cref="WhileWritten"/>, then throws.</summary>
    [MessagePackFormatter(typeof(Formatter))]
    public readonly struct ArgumentsThatFailToEncode(Action whileWritten)
    {
        public Action WhileWritten { get; } = whileWritten;

        public sealed class Formatter : IMessagePackFormatter<ArgumentsThatFailToEncode>
        {
            public void Serialize(ref MessagePackWriter writer, ArgumentsThatFailToEncode value, MessagePackSerializerOptions options)
            {
                value.WhileWritten();
                throw new InvalidOperationException("These arguments cannot be written.");
            }

            public ArgumentsThatFailToEncode Deserialize(ref MessagePackReader reader, MessagePackSerializerOptions options) =>
                throw new NotSupportedException("Only ever written.");
        }
    }
}
