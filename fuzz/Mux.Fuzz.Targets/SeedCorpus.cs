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

    private static byte[] Raw(FrameType type, uint callId, byte[] body)
    {
        var writer = new ArrayBufferWriter<byte>();
        FrameWriter.WriteRaw(writer, type, callId, body);
        return writer.WrittenSpan.ToArray();
    }
}
