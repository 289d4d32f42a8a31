using System.Buffers;
using System.Net;
using System.Net.Sockets;
using MessagePack;
using Mux.Protocol;
using Mux.Tests.Generated;
using Mux.Tests.Infrastructure;
using Mux.Tests.Protocol;
using static Mux.Tests.Protocol.ProtocolTestHelpers;

namespace Mux.Tests.Serialization;

/// <summary>
/// Mux's bodies are MessagePack-CSharp's bytes, both ways: a peer that has nothing but
/// <see cref="MessagePackSerializer"/> and the frame layout talks to Mux.
/// </summary>
public sealed class MessagePackInteropTests
{
    private const string Service = "Mux.Tests.Generated.IGeneratedService";

    public static TheoryData<bool> Compression => new() { false, true };

    [Theory]
    [MemberData(nameof(Compression))]
    public async Task RequestBody_IsWhatMessagePackSerializerWritesForTheArgumentArray(bool lz4)
    {
        MessagePackSerializerOptions options = lz4
            ? MessagePackSerializerOptions.Standard.WithCompression(MessagePackCompression.Lz4BlockArray)
            : MessagePackSerializerOptions.Standard;
        using var listener = new TcpListener(IPAddress.Loopback, 0);
        listener.Start();
        Task<MuxClient> connecting = MuxClient.ConnectAsync(listener.LocalEndpoint, new MuxClientOptions { SerializerOptions = options });
        using Socket socket = await listener.AcceptSocketAsync().WaitAsync(TestHost.Patience);
        var peer = new RawPeer(socket);
        Assert.Equal(FrameType.Hello, (await peer.ReceiveFrameAsync()).Type);
        await peer.SendAsync(WriteHelloFrame(FrameType.HelloAck, new HandshakeSettings(ProtocolConstants.Version, 4 * 1024 * 1024, int.MaxValue, null)));
        await using MuxClient client = await connecting.WaitAsync(TestHost.Patience);
        var when = new DateTime(2024, 2, 3, 4, 5, 6, DateTimeKind.Utc);
        var id = Guid.Parse("6f9619ff-8b86-d011-b42d-00c04fc964ff");

        Task<string> call = client.CreateProxy<IGeneratedService>().Describe(new string('x', 300), 42, 2.5, true, id, when);
        ReceivedFrame request = await peer.ReceiveFrameAsync();

        Assert.Equal(FrameType.Request, request.Type);
        Assert.Equal(MuxMethodId.Compute(Service + ".Describe"), request.MethodId);
        // The typed equivalent of the argument array: a value tuple is written as a MessagePack array of
        // its items, each with its type's formatter. (An object[] would also do, but MessagePack writes
        // boxed integers in their fixed-size form; Mux, knowing the types, writes the compact one.)
        byte[] expected = MessagePackSerializer.Serialize((new string('x', 300), 42, 2.5, true, id, when), options);
        Assert.Equal(Convert.ToHexString(expected), Convert.ToHexString(request.Payload));

        // And the result MessagePackSerializer writes is what the proxy returns.
        await peer.SendAsync(WriteRawFrame(FrameType.Response, request.CallId, MessagePackSerializer.Serialize("described", options)));
        Assert.Equal("described", await call.WaitAsync(TestHost.Patience));
    }

    [Fact]
    public async Task Server_AcceptsABodyMessagePackSerializerWrote_AndAnswersWithItsBytes()
    {
        var server = new MuxServer(new MuxServerOptions { EndPoint = new IPEndPoint(IPAddress.Loopback, 0) });
        server.AddService<IGeneratedService>(new GeneratedService());
        await server.StartAsync();
        try
        {
            using var socket = new Socket(AddressFamily.InterNetwork, SocketType.Stream, ProtocolType.Tcp);
            await socket.ConnectAsync(server.LocalEndPoint!).WaitAsync(TestHost.Patience);
            var peer = new RawPeer(socket);
            await peer.SendAsync(WriteHelloFrame(FrameType.Hello, new HandshakeSettings(ProtocolConstants.Version, 4 * 1024 * 1024, int.MaxValue, null)));
            Assert.Equal(FrameType.HelloAck, (await peer.ReceiveFrameAsync()).Type);
            Order order = GeneratedFormatterTests.SampleOrder();

            byte[] body = MessagePackSerializer.Serialize(new object[] { order });
            await peer.SendAsync(Concat(RequestHeader(7, MuxMethodId.Compute(Service + ".Roundtrip"), body.Length), body));
            ReceivedFrame response = await peer.ReceiveFrameAsync();

            Assert.Equal((FrameType.Response, 7u), (response.Type, response.CallId));
            order.Customer += " (seen)";
            order.Items.Add(new LineItem("server", 1, 0.01m));
            Assert.Equal(Convert.ToHexString(MessagePackSerializer.Serialize(order)), Convert.ToHexString(response.Payload));
        }
        finally
        {
            await server.StopAsync(new CancellationTokenSource(TestHost.Patience).Token).WaitAsync(TestHost.Patience);
        }
    }

    /// <summary>A Request frame's header: length, type, flags, call id, method id.</summary>
    private static byte[] RequestHeader(uint callId, uint methodId, int bodyLength)
    {
        byte[] header = new byte[ProtocolConstants.FrameHeaderSize + ProtocolConstants.RequestHeaderSize];
        System.Buffers.Binary.BinaryPrimitives.WriteUInt32LittleEndian(header, (uint)(header.Length - ProtocolConstants.LengthPrefixSize + bodyLength));
        header[4] = (byte)FrameType.Request;
        System.Buffers.Binary.BinaryPrimitives.WriteUInt32LittleEndian(header.AsSpan(6), callId);
        System.Buffers.Binary.BinaryPrimitives.WriteUInt32LittleEndian(header.AsSpan(ProtocolConstants.FrameHeaderSize), methodId);
        return header;
    }

    /// <summary>The other end of a connection, speaking frames by hand.</summary>
    private sealed class RawPeer(Socket socket)
    {
        private readonly List<byte> _received = new();

        public async Task SendAsync(byte[] bytes)
        {
            int sent = 0;
            while (sent < bytes.Length)
            {
                sent += await socket.SendAsync(bytes.AsMemory(sent), SocketFlags.None).AsTask().WaitAsync(TestHost.Patience);
            }
        }

        public async Task<ReceivedFrame> ReceiveFrameAsync()
        {
            byte[] chunk = new byte[64 * 1024];
            using var deadline = new CancellationTokenSource(TestHost.Patience);
            while (true)
            {
                var buffer = new ReadOnlySequence<byte>(_received.ToArray());
                if (FrameReader.TryRead(ref buffer, 16 * 1024 * 1024, out Frame frame))
                {
                    ReceivedFrame copy = ReceivedFrame.From(frame);
                    _received.RemoveRange(0, _received.Count - (int)buffer.Length);
                    return copy;
                }

                int received = await socket.ReceiveAsync(chunk.AsMemory(), SocketFlags.None, deadline.Token);
                Assert.True(received > 0, "The peer closed the connection before a whole frame arrived.");
                _received.AddRange(chunk.AsSpan(0, received));
            }
        }
    }
}
