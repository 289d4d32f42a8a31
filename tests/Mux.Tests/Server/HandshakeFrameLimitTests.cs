using System.Buffers.Binary;
using System.Collections.Concurrent;
using Microsoft.Extensions.Logging;
using Mux.Protocol;
using Mux.Tests.Protocol;
using Mux.Tests.Infrastructure;
using static Mux.Tests.Protocol.ProtocolTestHelpers;

namespace Mux.Tests.Server;

/// <summary>Before the handshake, a client is nobody yet: the server takes from it no frame larger
/// than a Hello can be (the protocol's 4096 bytes), whatever its MaxFrameSize.</summary>
public class HandshakeFrameLimitTests
{
    [Fact]
    public async Task AFirstFrameAnnouncingOneMebibyte_ClosesItsConnectionAsAProtocolErrorAtOnce_AndTheServerServesOthers()
    {
        var log = new CloseLog();

        // A handshake timeout far beyond the test's patience: only the frame's size can close it in time.
        await using TestHost host = await TestHost.StartTcpAsync(new MuxServerOptions { HandshakeTimeout = TimeSpan.FromMinutes(10), LoggerFactory = log });
        await using RawMuxPeer raw = await RawMuxPeer.ConnectAsync(host.Server.LocalEndPoint!);
        await Hosts.WaitUntilAsync(() => host.Server.ActiveConnections == 2, "the server to register the raw connection");

        // A Hello's header, magic and version announcing 1 MiB; the rest never comes.
        byte[] start = new byte[ProtocolConstants.FrameHeaderSize + ProtocolConstants.HelloHeaderSize];
        BinaryPrimitives.WriteUInt32LittleEndian(start, 1024 * 1024);
        start[4] = (byte)FrameType.Hello;
        BinaryPrimitives.WriteUInt32LittleEndian(start.AsSpan(ProtocolConstants.FrameHeaderSize), ProtocolConstants.Magic);
        BinaryPrimitives.WriteUInt16LittleEndian(start.AsSpan(ProtocolConstants.FrameHeaderSize + 4), ProtocolConstants.Version);
        await raw.SendAsync(start);

        await raw.AssertClosedByOtherSideAsync();
        await Hosts.WaitUntilAsync(() => host.Server.ActiveConnections == 1, "the server to drop the raw connection");
        await Hosts.WaitUntilAsync(() => !log.Closes.IsEmpty, "the server to log the close");
        (MuxCloseReason reason, Exception? error) = Assert.Single(log.Closes);
        Assert.Equal(MuxCloseReason.ProtocolError, reason);
        var protocol = Assert.IsType<MuxProtocolException>(error);
        Assert.Contains("1048576 bytes", protocol.Message, StringComparison.Ordinal);
        Assert.Contains("before the handshake", protocol.Message, StringComparison.Ordinal);
        Assert.Contains("4096", protocol.Message, StringComparison.Ordinal);

        Assert.Equal(5, await host.Proxy.Add(2, 3).AsTask().WaitAsync(TestHost.Patience));
        await using MuxClient another = await host.ConnectAnotherClientAsync();
        Assert.Equal(9, await another.CreateProxy<ITestService>().Add(4, 5).AsTask().WaitAsync(TestHost.Patience));
    }

    [Fact]
    public async Task AHelloOfExactly4096Bytes_IsAccepted()
    {
        await using TestHost host = await TestHost.StartTcpAsync();
        await using RawMuxPeer raw = await RawMuxPeer.ConnectAsync(host.Server.LocalEndPoint!);

        // A token long enough for a 16-bit string length, grown until the frame's length field is the limit.
        int overhead = WriteHelloFrame(FrameType.Hello, Hello(new string('k', 1000))).Length - ProtocolConstants.LengthPrefixSize - 1000;
        byte[] hello = WriteHelloFrame(FrameType.Hello, Hello(new string('k', ProtocolConstants.MinimumMaxFrameSize - overhead)));
        Assert.Equal((uint)ProtocolConstants.MinimumMaxFrameSize, BinaryPrimitives.ReadUInt32LittleEndian(hello));
        await raw.SendAsync(hello);

        Assert.Equal(FrameType.HelloAck, (await raw.ExpectFrameAsync()).Type);
        await raw.SendAsync(RawMuxPeer.AddRequest(1, 2, 3));
        ReceivedFrame response = await raw.ExpectFrameAsync();
        Assert.Equal(FrameType.Response, response.Type);
        Assert.Equal(new byte[] { 0x05 }, response.Payload);

        static HandshakeSettings Hello(string token) => new(ProtocolConstants.Version, 4096, 10, token);
    }

    /// <summary>Keeps why each connection closed (ConnectionLog's event 1).</summary>
    private sealed class CloseLog : LogHook
    {
        public ConcurrentQueue<(MuxCloseReason Reason, Exception? Error)> Closes { get; } = new();

        public override void Log<TState>(LogLevel logLevel, EventId eventId, TState state, Exception? exception, Func<TState, Exception?, string> formatter)
        {
            if (eventId.Id == 1 && state is IReadOnlyList<KeyValuePair<string, object?>> values && values.FirstOrDefault(static v => v.Key == "Reason").Value is MuxCloseReason reason)
            {
                Closes.Enqueue((reason, exception));
            }
        }
    }
}
