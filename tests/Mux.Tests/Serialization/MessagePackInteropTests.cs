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
        await using RawMuxPeer peer = await RawMuxPeer.AcceptAsync(listener);
        await peer.AnswerHelloAsync();
        await using MuxClient client = await connecting.WaitAsync(TestHost.Patience);
        var when = new DateTime(2024, 2, 3, 4, 5, 6, DateTimeKind.Utc);
        var id = Guid.Parse("6f9619ff-8b86-d011-b42d-00c04fc964ff");

        Task<string> call = client.CreateProxy<IGeneratedService>().Describe(new string('x', 300), 42, 2.5, true, id, when);
        ReceivedFrame request = await peer.ExpectFrameAsync();

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
            await using RawMuxPeer peer = await RawMuxPeer.ConnectAsync(server.LocalEndPoint!);
            await peer.HandshakeAsync();
            Order order = GeneratedFormatterTests.SampleOrder();

            byte[] body = MessagePackSerializer.Serialize(new object[] { order });
            await peer.SendAsync(Concat(RequestHeader(7, MuxMethodId.Compute(Service + ".Roundtrip"), body.Length), body));
            ReceivedFrame response = await peer.ExpectFrameAsync();

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
}
