using System.Buffers;
using System.Buffers.Binary;
using MessagePack;
using Mux.Protocol;

namespace Mux.Fuzz;

/// <summary>Writes the starting corpus: well-formed conversations the fuzzer mutates from, so it
/// starts past the handshake instead of having to discover the magic number.</summary>
public static class SeedCorpus
{
    public static IReadOnlyDictionary<string, byte[]> Create()
    {
        byte[] hello = Hello();
        var requests = new Dictionary<string, byte[]>
        {
            ["add"] = Request(1, "Mux.Fuzz.IFuzzService.Add", (2, 3)),
            ["echo"] = Request(2, "Mux.Fuzz.IFuzzService.Echo", new object?[] { new FuzzOrder { Id = new Guid("6f9619ff-8b86-d011-b42d-00c04fc964ff"), Placed = new DateTimeOffset(2026, 1, 2, 3, 4, 5, TimeSpan.FromHours(1)), Lines = ["a", "b"], Total = 1.5m } }),
            ["count"] = Request(3, "Mux.Fuzz.IFuzzService.Count", (new Dictionary<string, List<int>> { ["x"] = [1, 2] }, new string?[] { "n", null })),
            ["shape"] = Request(4, "Mux.Fuzz.IFuzzService.Shape", new object?[] { new FuzzSquare { Side = 2 } }),
            ["nothing"] = Request(5, "Mux.Fuzz.IFuzzService.Nothing", Array.Empty<object>()),
        };

        var seeds = new Dictionary<string, byte[]> { ["hello"] = hello };
        foreach ((string name, byte[] request) in requests)
        {
            seeds["hello-" + name] = [.. hello, .. request];
        }

        seeds["hello-add-cancel"] = [.. hello, .. requests["add"], .. Raw(FrameType.Cancel, 1, [])];
        seeds["hello-ping-goaway"] = [.. hello, .. Raw(FrameType.Ping, 0, new byte[8]), .. Raw(FrameType.GoAway, 0, new byte[4])];
        return seeds;
    }

    /// <summary>
    /// The client target's starting corpus: what a server sends a client (fuzz/corpus-client). Each
    /// starts with a HelloAck; call ids 1 to 8 name the client's calls (<see cref="ClientFuzzTarget.Calls"/>).
    /// </summary>
    public static IReadOnlyDictionary<string, byte[]> CreateClient()
    {
        byte[] ack = HelloAck();
        byte[] nil = [0xc0];
        var order = new FuzzOrder { Id = new Guid("6f9619ff-8b86-d011-b42d-00c04fc964ff"), Placed = new DateTimeOffset(2026, 1, 2, 3, 4, 5, TimeSpan.FromHours(1)), Lines = ["a", "b"], Total = 1.5m };
        byte[] answers =
        [
            .. Raw(FrameType.Response, 1, Body(5)),
            .. Raw(FrameType.Response, 2, Body<FuzzOrder?>(order)),
            .. Raw(FrameType.Response, 3, Body(3)),
            .. Raw(FrameType.Response, 4, Body<FuzzShape?>(new FuzzCircle { Radius = 1 })),
            .. Raw(FrameType.Response, 5, nil),
            .. Raw(FrameType.Response, 6, Body<object?>(new object?[] { 1, "a", new Dictionary<object, object> { ["k"] = 2.5 }, null, true, new byte[] { 1 } })),
            .. Raw(FrameType.StreamItem, 7, Body<FuzzShape?>(new FuzzSquare { Side = 2 })),
            .. Raw(FrameType.StreamItem, 7, nil),
            .. Raw(FrameType.Response, 7, nil),
            .. Raw(FrameType.StreamItem, 8, Body(1)),
            .. Raw(FrameType.StreamItem, 8, Body("x")),
            .. Raw(FrameType.Response, 8, nil),
        ];
        byte[] errors =
        [
            .. Raw(FrameType.Error, 1, Body(new object?[] { 3, "bad arguments", null })),
            .. Raw(FrameType.Error, 2, Body(new object?[] { 1, "failed", "System.InvalidOperationException" })),
            .. Raw(FrameType.Error, 3, [0x91, 0x01]), // Too few fields.
            .. Raw(FrameType.Error, 4, Body(new object?[] { 14, "deadline", null })),
            .. Raw(FrameType.Error, 5, Body(new object?[] { 99, "a code this build does not know", null })),
            .. Raw(FrameType.Error, 7, Body(new object?[] { 4, "canceled", null })),
            .. Raw(FrameType.StreamItem, 8, Body(1)),
            .. Raw(FrameType.Error, 8, Body(new object?[] { 1, "failed", null })),
        ];

        // Echo's answer in two fragments: the total, then the rest in a Continuation.
        byte[] echo = Body<FuzzOrder?>(order);
        byte[] fragments =
        [
            .. Raw(FrameType.Response, 2, [.. UInt32(echo.Length), .. echo.AsSpan(0, 10)], FrameFlags.MoreFragments),
            .. Raw(FrameType.Continuation, 2, echo.AsSpan(10).ToArray()),
        ];

        // The server's own calls: arguments to read, a stream to drain, a stream to send back.
        byte[] serverCalls =
        [
            .. ServerRequest(1, "Mux.Fuzz.IFuzzClientSide.Take", Body(new object?[] { order, new object[] { 1, "a" }, new Dictionary<string, List<int>> { ["x"] = [1] } })),
            .. ServerRequest(2, "Mux.Fuzz.IFuzzClientSide.Drain", [0x90]),
            .. Raw(FrameType.StreamItem, 2, Body<FuzzShape?>(new FuzzCircle { Radius = 3 }), FrameFlags.ServerInitiated),
            .. Raw(FrameType.StreamEnd, 2, [], FrameFlags.ServerInitiated),
            .. ServerRequest(3, "Mux.Fuzz.IFuzzClientSide.Countdown", Body(new[] { 3 })),
            .. Raw(FrameType.StreamCredit, 3, UInt32(10), FrameFlags.ServerInitiated),
            .. ServerRequest(4, "Mux.Fuzz.IFuzzClientSide.Take", [0x93, 0xc0, 0xc0, 0xc0]),
            .. Raw(FrameType.Cancel, 4, [], FrameFlags.ServerInitiated),
            .. Raw(FrameType.Ping, 0, new byte[8]),
        ];

        return new Dictionary<string, byte[]>
        {
            ["ack"] = ack,
            ["ack-answers"] = [.. ack, .. answers],
            ["ack-errors"] = [.. ack, .. errors],
            ["ack-fragments"] = [.. ack, .. fragments],
            ["ack-server-calls"] = [.. ack, .. serverCalls],
            ["ack-goaway"] = [.. ack, .. Raw(FrameType.Response, 1, Body(5)), .. Raw(FrameType.GoAway, 0, UInt32(uint.MaxValue)), .. answers],
        };
    }

    private static byte[] HelloAck()
    {
        var writer = new ArrayBufferWriter<byte>();
        var body = new ArrayBufferWriter<byte>();
        var msgpack = new MessagePackWriter(body);
        new HandshakeSettings(ProtocolConstants.Version, 64 * 1024, 100, null) { MaxMetadataSize = 1024 }.Write(ref msgpack);
        msgpack.Flush();
        FrameWriter.WriteRaw(writer, FrameType.HelloAck, 0, body.WrittenSpan);
        return writer.WrittenSpan.ToArray();
    }

    private static byte[] ServerRequest(uint callId, string method, byte[] arguments)
    {
        byte[] body = [.. UInt32(MuxMethodId.Compute(method)), .. arguments];
        return Raw(FrameType.Request, callId, body, FrameFlags.ServerInitiated);
    }

    private static byte[] Body<T>(T value) => MessagePackSerializer.Serialize(value, MessagePackSerializerOptions.Standard);

    private static byte[] UInt32(long value)
    {
        byte[] bytes = new byte[4];
        BinaryPrimitives.WriteUInt32LittleEndian(bytes, (uint)value);
        return bytes;
    }

    private static byte[] Hello()
    {
        var writer = new ArrayBufferWriter<byte>();
        var body = new ArrayBufferWriter<byte>();
        var msgpack = new MessagePackWriter(body);
        new HandshakeSettings(ProtocolConstants.Version, 64 * 1024, 100, null).Write(ref msgpack);
        msgpack.Flush();
        FrameWriter.WriteRaw(writer, FrameType.Hello, 0, body.WrittenSpan);
        return writer.WrittenSpan.ToArray();
    }

    private static byte[] Request<T>(uint callId, string method, T arguments)
    {
        byte[] values = MessagePackSerializer.Serialize(arguments, MessagePackSerializerOptions.Standard);
        byte[] body = new byte[4 + values.Length];
        BinaryPrimitives.WriteUInt32LittleEndian(body, MuxMethodId.Compute(method));
        values.CopyTo(body, 4);
        return Raw(FrameType.Request, callId, body);
    }

    private static byte[] Raw(FrameType type, uint callId, byte[] body, FrameFlags flags = FrameFlags.None)
    {
        var writer = new ArrayBufferWriter<byte>();
        FrameWriter.WriteRaw(writer, type, callId, body, flags);
        return writer.WrittenSpan.ToArray();
    }
}
