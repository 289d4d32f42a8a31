using MessagePack;
using Mux.Serialization;
using Mux.Tests.Generated;

namespace Mux.Tests.Serialization;

/// <summary>
/// A body that announces a huge collection, string or bin in a few bytes is rejected by the
/// options either side reads with, before anything of the announced size is allocated: a peer
/// cannot make the reader of a 10-byte body allocate gigabytes (or fail with OutOfMemoryException
/// while other calls need the memory).
/// </summary>
public class HostileLengthTests
{
    // Far below what any of the announced lengths would take (2^31 elements of anything).
    private const long MaxAllocated = 1024 * 1024;

    public static TheoryData<string, byte[]> HostileBodies => new()
    {
        { "int[] of 2^31-1", [0xdd, 0x7f, 0xff, 0xff, 0xff, 0x01] },
        { "List<LineItem> of 2^32-1", [0xdd, 0xff, 0xff, 0xff, 0xff, 0xc0] },
        { "Dictionary<string, int[]> of 2^31-1", [0xdf, 0x7f, 0xff, 0xff, 0xff, 0xa1, 0x61, 0x90] },
        { "Order of 2^31-1 members", [0xdd, 0x7f, 0xff, 0xff, 0xff, 0xc0] },
        { "Order whose items announce 2^31-1", [0x98, 0xc0, 0xa1, 0x61, 0xdd, 0x7f, 0xff, 0xff, 0xff] },
        { "string of 2^32-1 bytes", [0xdb, 0xff, 0xff, 0xff, 0xff, 0x61] },
        { "byte[] of 2^31-1 bytes", [0xc6, 0x7f, 0xff, 0xff, 0xff, 0x01] },
        { "ReadOnlyMemory<byte> of 2^32-1 bytes", [0xc6, 0xff, 0xff, 0xff, 0xff, 0x01] },
    };

    [Theory]
    [MemberData(nameof(HostileBodies))]
    public void AHugeAnnouncedLength_InATinyBody_FailsWithoutAllocatingIt_OnEitherSide(string what, byte[] body)
    {
        foreach (MessagePackSerializerOptions options in new[] { MuxSerializerOptions.ForServer(MessagePackSerializerOptions.Standard), MuxSerializerOptions.ForClient(MessagePackSerializerOptions.Standard) })
        {
            Assert.Throws<MessagePackSerializationException>(() => Deserialize(what, body, options)); // Warms the formatters' caches.
            long before = GC.GetAllocatedBytesForCurrentThread();

            Assert.Throws<MessagePackSerializationException>(() => Deserialize(what, body, options));

            long allocated = GC.GetAllocatedBytesForCurrentThread() - before;
            Assert.True(allocated < MaxAllocated, $"Reading {what} allocated {allocated:N0} bytes.");
        }
    }

    private static object? Deserialize(string what, byte[] body, MessagePackSerializerOptions options) => what.Split(' ')[0] switch
    {
        "int[]" => MessagePackSerializer.Deserialize<int[]>(body, options),
        "List<LineItem>" => MessagePackSerializer.Deserialize<List<LineItem>>(body, options),
        "Dictionary<string," => MessagePackSerializer.Deserialize<Dictionary<string, int[]>>(body, options),
        "Order" => MessagePackSerializer.Deserialize<Order>(body, options),
        "string" => MessagePackSerializer.Deserialize<string>(body, options),
        "byte[]" => MessagePackSerializer.Deserialize<byte[]>(body, options),
        "ReadOnlyMemory<byte>" => MessagePackSerializer.Deserialize<ReadOnlyMemory<byte>>(body, options),
        _ => throw new ArgumentOutOfRangeException(nameof(what), what, null),
    };
}
