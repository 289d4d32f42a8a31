using System.Buffers.Binary;
using System.Net;
using MessagePack;
using Mux.Protocol;
using Mux.Tests.Infrastructure;
using Mux.Tests.Protocol;
using static Mux.Tests.Protocol.ProtocolTestHelpers;

namespace Mux.Tests.Streaming;

/// <summary>The stream frames on the wire, sent by hand: the window a server announces, the credit
/// it grants as its handler reads, StreamEnd, and a client that sends beyond its credit.</summary>
public sealed class StreamWireTests
{
    private static readonly uint DrainId = MuxMethodId.Compute("Mux.Tests.Streaming.IStreamService.Drain");
    private static readonly uint IgnoreId = MuxMethodId.Compute("Mux.Tests.Streaming.IStreamService.Ignore");

    private static async Task<(MuxServer Server, StreamService Service)> StartServerAsync()
    {
        var service = new StreamService();
        var server = new MuxServer(new MuxServerOptions { EndPoint = new IPEndPoint(IPAddress.Loopback, 0), StreamWindow = 4 });
        server.AddService<IStreamService>(service);
        server.AddService<ITestService>(new TestService());
        await server.StartAsync().WaitAsync(TestHost.Patience);
        return (server, service);
    }

    private static byte[] Item(uint callId, int value) =>
        WriteFrame(FrameType.StreamItem, callId, 0, new RawBody(MessagePackSerializer.Serialize(value)));

    [Fact]
    public async Task AServer_AnnouncesItsWindow_GrantsCreditAsTheHandlerReads_AndAnswersAfterStreamEnd()
    {
        (MuxServer server, StreamService service) = await StartServerAsync();
        await using (server)
        {
            await using RawMuxPeer raw = await RawMuxPeer.ConnectAsync(server.LocalEndPoint!);
            HandshakeSettings settings = await raw.HandshakeAsync();
            Assert.Equal(4, settings.StreamWindow);

            await raw.SendAsync(WriteFrame(FrameType.Request, 1, DrainId, new RawBody([0x90])));
            for (int i = 0; i < 4; i++)
            {
                await raw.SendAsync(Item(1, i)); // The whole window, without waiting for credit.
            }

            // Half a window read: credit for two more, twice.
            for (int grant = 0; grant < 2; grant++)
            {
                ReceivedFrame credit = await raw.ExpectFrameAsync();
                Assert.Equal(FrameType.StreamCredit, credit.Type);
                Assert.Equal(1u, credit.CallId);
                Assert.Equal(2u, BinaryPrimitives.ReadUInt32LittleEndian(credit.Payload));
            }

            await raw.SendAsync(WriteRawFrame(FrameType.StreamEnd, 1, []));
            ReceivedFrame answer = await raw.ExpectFrameAsync();
            Assert.Equal(FrameType.Response, answer.Type);
            Assert.Equal(1u, answer.CallId);
            Assert.Null(await service.DrainEnded.Task.WaitAsync(TestHost.Patience));
            Assert.Equal(4, service.DrainCount);
        }
    }

    [Fact]
    public async Task AClientThatSendsMoreItemsThanItsCredit_LosesItsConnection_AndOthersKeepTheirs()
    {
        (MuxServer server, StreamService service) = await StartServerAsync();
        await using (server)
        {
            await using MuxClient other = await MuxClient.ConnectAsync(server.LocalEndPoint!).WaitAsync(TestHost.Patience);
            await using RawMuxPeer raw = await RawMuxPeer.ConnectAsync(server.LocalEndPoint!);
            await raw.HandshakeAsync();
            await Hosts.WaitUntilAsync(() => server.ActiveConnections == 2, "both connections");

            // A handler that reads nothing grants nothing: with StreamWindow 4 the fifth item is one too many.
            await raw.SendAsync(WriteFrame(FrameType.Request, 1, IgnoreId, new RawBody([0x90])));
            byte[] items = [.. Item(1, 0), .. Item(1, 1), .. Item(1, 2), .. Item(1, 3), .. Item(1, 4), .. Item(1, 5), .. Item(1, 6), .. Item(1, 7), .. Item(1, 8), .. Item(1, 9)];
            await raw.SendAsync(items);

            await raw.AssertClosedByOtherSideAsync();
            await Hosts.WaitUntilAsync(() => server.ActiveConnections == 1, "the server to drop the connection that broke its window");
            await service.IgnoreCanceled.Task.WaitAsync(TestHost.Patience); // The handler's token fired with the close.
            Assert.Equal(5, await other.CreateProxy<ITestService>().Add(2, 3).AsTask().WaitAsync(TestHost.Patience));
        }
    }
}
