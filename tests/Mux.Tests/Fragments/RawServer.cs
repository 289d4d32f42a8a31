using System.Net;
using System.Net.Sockets;
using Mux.Protocol;
using Mux.Tests.Infrastructure;

namespace Mux.Tests.Fragments;

/// <summary>A raw server (the test writes its frames) that a real client has connected to; its
/// HelloAck announces no traceContext, so message sizes are what a test computes.</summary>
internal sealed class RawServer : IAsyncDisposable
{
    private readonly TcpListener _listener;

    private RawServer(TcpListener listener, RawMuxPeer peer, MuxClient client)
    {
        _listener = listener;
        Peer = peer;
        Client = client;
        Proxy = client.CreateProxy<IBlobService>();
    }

    public RawMuxPeer Peer { get; }

    public MuxClient Client { get; }

    public IBlobService Proxy { get; }

    public static async Task<RawServer> StartAsync(MuxClientOptions? options = null)
    {
        var listener = new TcpListener(IPAddress.Loopback, 0);
        listener.Start();
        options ??= new MuxClientOptions();
        options.AutoReconnect = false;
        Task<MuxClient> connecting = MuxClient.ConnectAsync(listener.LocalEndpoint, options);
        RawMuxPeer peer = await RawMuxPeer.AcceptAsync(listener);
        Assert.Equal(FrameType.Hello, (await peer.ExpectFrameAsync()).Type);
        await peer.SendAsync(FragmentWire.PlainHelloAck());
        MuxClient client = await connecting.WaitAsync(TestHost.Patience);
        return new RawServer(listener, peer, client);
    }

    public async ValueTask DisposeAsync()
    {
        await Client.DisposeAsync().AsTask().WaitAsync(TestHost.Patience);
        await Peer.DisposeAsync();
        _listener.Stop();
    }
}
