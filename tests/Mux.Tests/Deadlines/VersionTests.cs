using System.Buffers;
using System.Net;
using System.Net.Sockets;
using Mux.Protocol;
using Mux.Tests.Infrastructure;
using Mux.Tests.Protocol;
using static Mux.Tests.Protocol.ProtocolTestHelpers;

namespace Mux.Tests.Deadlines;

/// <summary>Version 2 (the deadline header and the other issue 10 frames): a peer of version 1 is
/// refused by name on both sides. (A version-1 client sent to this server is covered by
/// BadInputIntegrationTests.)</summary>
public class VersionTests
{
    [Fact]
    public async Task Client_SaysVersion2InItsHello_AndRefusesAVersion1ServersHelloAck()
    {
        using var listener = new TcpListener(IPAddress.Loopback, 0);
        listener.Start();
        Task<MuxClient> connecting = MuxClient.ConnectAsync(listener.LocalEndpoint, new MuxClientOptions { AutoReconnect = false });
        await using RawMuxPeer peer = await RawMuxPeer.AcceptAsync(listener);

        ReceivedFrame hello = await peer.ExpectFrameAsync();
        Assert.Equal(FrameType.Hello, hello.Type);
        Assert.Equal(2, HandshakeSettings.Parse(new ReadOnlySequence<byte>(hello.Payload)).Version);
        await peer.SendAsync(WriteHelloFrame(FrameType.HelloAck, new HandshakeSettings(1, 4 * 1024 * 1024, 100, null)));

        Exception refused = await Assert.ThrowsAnyAsync<Exception>(() => connecting.WaitAsync(TestHost.Patience));
        Assert.Contains("The server answered with protocol version 1; this client speaks version 2.", refused.ToString(), StringComparison.Ordinal);
    }
}
