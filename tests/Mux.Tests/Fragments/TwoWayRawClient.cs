using System.Net;
using Mux.Protocol;
using Mux.Tests.Callbacks;
using Mux.Tests.Infrastructure;
using Mux.Tests.Protocol;
using static Mux.Tests.Protocol.ProtocolTestHelpers;

namespace Mux.Tests.Fragments;

/// <summary>A real server on loopback TCP (port 0) serving <see cref="IBlobService"/> and
/// <see cref="ICallbackHub"/>, and a raw client (the test writes its frames) that has registered,
/// so the test can call it from the server and answer as it likes.</summary>
internal sealed class TwoWayRawClient : IAsyncDisposable
{
    private TwoWayRawClient(MuxServer server, RawMuxPeer peer, MuxRemoteClient remote)
    {
        Server = server;
        Peer = peer;
        Remote = remote;
        ClientProxy = remote.CreateProxy<IClientBlobs>();
    }

    public MuxServer Server { get; }

    public RawMuxPeer Peer { get; }

    /// <summary>The server's handle to the raw client.</summary>
    public MuxRemoteClient Remote { get; }

    /// <summary>Calls from the server to the raw client.</summary>
    public IClientBlobs ClientProxy { get; }

    public static async Task<TwoWayRawClient> StartAsync(MuxServerOptions options)
    {
        options.EndPoint ??= new IPEndPoint(IPAddress.Loopback, 0);
        var hub = new CallbackHub();
        var server = new MuxServer(options);
        server.AddService<IBlobService>(new BlobService());
        server.AddService<ICallbackHub>(hub);
        await server.StartAsync().WaitAsync(TestHost.Patience);
        RawMuxPeer peer = await RawMuxPeer.ConnectAsync(server.LocalEndPoint!);
        await peer.HandshakeAsync();
        await peer.SendAsync(WriteFrame(FrameType.Request, 1, MuxMethodId.Compute("Mux.Tests.Callbacks.ICallbackHub.Register"), new RawBody([0x90])));
        ReceivedFrame registered = await peer.ExpectFrameAsync();
        Assert.Equal((FrameType.Response, 1u), (registered.Type, registered.CallId));
        Assert.True(hub.Registered.TryDequeue(out MuxRemoteClient? remote));
        return new TwoWayRawClient(server, peer, remote!);
    }

    public async ValueTask DisposeAsync()
    {
        await Peer.DisposeAsync();
        using var deadline = new CancellationTokenSource(TestHost.Patience);
        await Server.StopAsync(deadline.Token).WaitAsync(TestHost.Patience + TestHost.Patience);
    }
}
