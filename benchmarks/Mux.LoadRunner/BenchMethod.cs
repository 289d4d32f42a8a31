using System.Buffers;
using Mux.Samples.Contracts;
using MessagePack;

namespace Mux.LoadRunner;

/// <summary>A measured call, and the sizes of the Mux frames it puts on the wire.</summary>
/// <param name="Name">The CLI name: add, list1, list100 or bytes1k.</param>
/// <param name="Description">The call, as the table's legend shows it.</param>
/// <param name="RequestFrameBytes">The whole Mux Request frame (length prefix included).</param>
/// <param name="ResponseFrameBytes">The whole Mux Response frame (length prefix included).</param>
internal sealed record BenchMethod(string Name, string Description, int RequestFrameBytes, int ResponseFrameBytes)
{
    // docs/protocol.md: length u32 + type u8 + flags u8 + call id u32, then the type's header.
    private const int FrameHeaderBytes = 4 + 1 + 1 + 4;
    private const int RequestHeaderBytes = FrameHeaderBytes + 4; // + method id u32
    private const int ResponseHeaderBytes = FrameHeaderBytes;

    public static readonly string[] Names = ["add", "list1", "list100", "bytes1k"];

    /// <summary>
    /// Builds the method with its frame sizes, computed by encoding the real arguments and the real
    /// result with MessagePack-CSharp (the same bytes a Mux client and server write),
    /// so the raw echo moves exactly as many bytes per call as Mux does.
    /// </summary>
    public static BenchMethod Create(string name) => name switch
    {
        "add" => new(name, "Add(1, 2) -> int",
            RequestHeaderBytes + Encode(static (ref MessagePackWriter w) => { w.WriteArrayHeader(2); w.Write(1); w.Write(2); }),
            ResponseHeaderBytes + Encode(static (ref MessagePackWriter w) => w.Write(3))),
        "list1" => ListMethod(name, 1),
        "list100" => ListMethod(name, 100),
        "bytes1k" => new(name, "Bytes(1024) -> byte[1024]",
            RequestHeaderBytes + Encode(static (ref MessagePackWriter w) => { w.WriteArrayHeader(1); w.Write(1024); }),
            ResponseHeaderBytes + Encode(static (ref MessagePackWriter w) => MessagePackSerializer.Serialize(ref w, BenchData.Bytes(1024)))),
        _ => throw new ArgumentException($"Unknown method '{name}'; expected one of {string.Join(", ", Names)}."),
    };

    private static BenchMethod ListMethod(string name, int count)
    {
        List<User> users = BenchData.Users(count);
        int request = RequestHeaderBytes + Encode((ref MessagePackWriter w) => { w.WriteArrayHeader(1); w.Write(count); });
        int response = ResponseHeaderBytes + Encode((ref MessagePackWriter w) => MessagePackSerializer.Serialize(ref w, users));
        return new BenchMethod(name, $"List({count}) -> List<User>[{count}]", request, response);
    }

    private delegate void WriteBody(ref MessagePackWriter writer);

    private static int Encode(WriteBody write)
    {
        var output = new ArrayBufferWriter<byte>();
        var writer = new MessagePackWriter(output);
        write(ref writer);
        writer.Flush();
        return output.WrittenCount;
    }
}
