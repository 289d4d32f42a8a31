using System.IO.Pipelines;
using Mux.Connection;
using Mux.Tests.Infrastructure;

namespace Mux.Tests.Streaming;

/// <summary>
/// A stream whose handler fails with an error longer than one fragment: the items it made before
/// the error reach the caller before the error does, whichever side serves the stream. The writer
/// takes the queued frames, then starts the next message in fragments; items queued between those
/// two steps, followed by the error, must not let the error's first fragment pass them, or the
/// receiver sees an item while that call's error is still arriving, a broken sequence that closes
/// the whole connection. Held deterministically in that gap: the serving side's output stops the
/// writer turn that wrote item 0 until the rest of the stream and its error are queued.
/// </summary>
public sealed class StreamItemsBeforeFragmentedErrorTests
{
    private const int Items = 5;

    // With 1 KiB fragments, the error goes in ten of them.
    private const int MessageLength = 10_000;

    private static readonly TimeSpan Patience = TestHost.Patience;

    [Fact]
    public async Task AServersItemsQueuedAsTheWriterTookTheQueue_ReachTheClientBeforeItsErrorInFragments()
    {
        await using Scene scene = await Scene.StartAsync(clientServes: false);

        await AssertItemsThenErrorAsync(scene, scene.Client.CreateProxy<IFailingStreams>(), scene.Server.Connections.Single());
    }

    [Fact]
    public async Task AClientsItemsQueuedAsTheWriterTookTheQueue_ReachTheServerBeforeItsErrorInFragments()
    {
        await using Scene scene = await Scene.StartAsync(clientServes: true);
        IFailingStreams proxy = scene.Server.Connections.Single().RemoteClient.CreateProxy<IFailingStreams>();

        await AssertItemsThenErrorAsync(scene, proxy, scene.Client.Connection);
    }

    private static async Task AssertItemsThenErrorAsync(Scene scene, IFailingStreams proxy, MuxConnection serving)
    {
        // A second call in flight: the serving connection is not quiet, so its writer runs as the
        // writer loop on a thread of its own, and holding it leaves the handler's thread free.
        Task held = proxy.Hold();
        await scene.Service.Holding.Task.WaitAsync(Patience);

        var items = new List<int>();
        Task<MuxRemoteException> failed = Assert.ThrowsAsync<MuxRemoteException>(async () =>
        {
            await foreach (int item in proxy.ItemsThenFailure(Items, MessageLength))
            {
                items.Add(item);
            }
        });

        // The serving side's writer has taken the queue and written item 0; it waits there. The
        // handler makes the other items and fails: all of it queues behind the held turn.
        await scene.Output.Held.Task.WaitAsync(Patience);
        scene.Service.Proceed.SetResult();
        await Hosts.WaitUntilAsync(() => serving.Outbound.Queued == (Items - 1, 1), "the other items and the error in fragments to be queued");
        scene.Output.Release();

        MuxRemoteException error = await failed.WaitAsync(Patience);
        Assert.Equal(FailingStreams.Message(MessageLength), error.Message);
        Assert.Equal(Enumerable.Range(0, Items), items);

        // The connection lives on: the other call is answered on it.
        scene.Service.ReleaseHold();
        await held.WaitAsync(Patience);
    }

    /// <summary>A server and a client over an in-memory pipe pair, both with 1 KiB fragments; the
    /// side that serves <see cref="IFailingStreams"/> writes through <see cref="Output"/>.</summary>
    private sealed class Scene : IAsyncDisposable
    {
        private Scene(MuxServer server, MuxClient client, FailingStreams service, HoldingPipeWriter output)
        {
            Server = server;
            Client = client;
            Service = service;
            Output = output;
        }

        public MuxServer Server { get; }

        public MuxClient Client { get; }

        public FailingStreams Service { get; }

        public HoldingPipeWriter Output { get; }

        public static async Task<Scene> StartAsync(bool clientServes)
        {
            var toServer = new Pipe();
            var toClient = new Pipe();
            var output = new HoldingPipeWriter(clientServes ? toServer.Writer : toClient.Writer);
            var service = new FailingStreams { HoldAfterFirstItem = output };
            var server = new MuxServer(new MuxServerOptions { FragmentSize = 1024 });
            if (!clientServes)
            {
                server.AddService<IFailingStreams>(service);
            }

            server.Accept(new Ends(toServer.Reader, clientServes ? toClient.Writer : output));
            MuxClient client = await MuxClient.ConnectAsync(new Ends(toClient.Reader, clientServes ? output : toServer.Writer), new MuxClientOptions { FragmentSize = 1024 }).WaitAsync(Patience);
            if (clientServes)
            {
                client.AddService<IFailingStreams>(service);
            }

            return new Scene(server, client, service, output);
        }

        public async ValueTask DisposeAsync()
        {
            Output.Release();
            Service.ReleaseHold();
            await Client.DisposeAsync().AsTask().WaitAsync(Patience);
            using var stop = new CancellationTokenSource(Patience);
            await Server.StopAsync(stop.Token).WaitAsync(Patience + Patience);
        }
    }

    private sealed class Ends(PipeReader input, PipeWriter output) : IDuplexPipe
    {
        public PipeReader Input { get; } = input;

        public PipeWriter Output { get; } = output;
    }
}
