using System.Buffers;
using MessagePack;
using MessagePack.Formatters;
using MessagePack.Resolvers;
using Mux.Protocol;
using Mux.Serialization;

namespace Mux.Tests.Serialization;

/// <summary>Mux writes bytes in pieces (so that a large message fits pooled 64 KiB segments), byte
/// for byte as MessagePack-CSharp writes them, and reads them as it does.</summary>
public sealed class BinaryInPiecesTests
{
    private static readonly MessagePackSerializerOptions s_mux = MuxSerializerOptions.ForClient(MessagePackSerializerOptions.Standard);

    public static TheoryData<int> Lengths => [0, 1, 255, 256, 16_383, 16_384, 65_535, 65_536, 65_537, 1_000_000];

    [Theory]
    [MemberData(nameof(Lengths))]
    public void EveryBytesType_IsWrittenExactlyAsMessagePackWritesIt_AndReadsBack(int length)
    {
        byte[] data = Fragments.BlobService.Pattern(length);

        AssertSameBytes(data, static (value, options) => MessagePackSerializer.Serialize(value, options), length);
        AssertSameBytes<ReadOnlyMemory<byte>>(data, static (value, options) => MessagePackSerializer.Serialize(value, options), length);
        AssertSameBytes<Memory<byte>>(data, static (value, options) => MessagePackSerializer.Serialize(value, options), length);
        AssertSameBytes(new ArraySegment<byte>(data), static (value, options) => MessagePackSerializer.Serialize(value, options), length);
        AssertSameBytes(new ReadOnlySequence<byte>(data), static (value, options) => MessagePackSerializer.Serialize(value, options), length);

        Assert.Equal(data, MessagePackSerializer.Deserialize<byte[]>(MessagePackSerializer.Serialize(data, s_mux), s_mux));
        Assert.Equal(data, MessagePackSerializer.Deserialize<ReadOnlyMemory<byte>>(MessagePackSerializer.Serialize<ReadOnlyMemory<byte>>(data, s_mux), s_mux).ToArray());
    }

    [Fact]
    public void NullAndDefault_AreNil_AsMessagePackWritesThem()
    {
        Assert.Equal([MessagePackCode.Nil], MessagePackSerializer.Serialize<byte[]?>(null, s_mux));
        Assert.Equal([MessagePackCode.Nil], MessagePackSerializer.Serialize(default(ArraySegment<byte>), s_mux));
        Assert.Null(MessagePackSerializer.Deserialize<byte[]?>(new byte[] { MessagePackCode.Nil }, s_mux));
    }

    [Fact]
    public void UnderOldSpec_BytesAreStillWrittenAsMessagePackWritesThem()
    {
        byte[] data = Fragments.BlobService.Pattern(100_000);
        MessagePackSerializerOptions oldSpec = MessagePackSerializerOptions.Standard.WithOldSpec();

        Assert.Equal(MessagePackSerializer.Serialize(data, oldSpec), MessagePackSerializer.Serialize(data, MuxSerializerOptions.ForClient(oldSpec)));
    }

    [Fact]
    public void ALargeArray_IsWrittenIntoSegments_NeverAskingForMoreThanOneSegment()
    {
        var pool = new BufferSegmentPool(64);
        var writer = new MessageBufferWriter(pool);
        writer.Start(new PooledBufferWriter());
        byte[] data = Fragments.BlobService.Pattern(1_000_000);

        var messagePack = new MessagePackWriter(writer);
        MessagePackSerializer.Serialize(ref messagePack, data, s_mux);
        messagePack.Flush();
        BufferSegment first = writer.Detach();

        int segments = 0;
        for (BufferSegment? segment = first; segment is not null; segment = segment.NextSegment)
        {
            Assert.False(segment.IsOversized);
            segments++;
        }

        var bytes = new ReadOnlySequence<byte>(first, 0, Last(first), Last(first).Used);
        Assert.Equal(MessagePackSerializer.Serialize(data, MessagePackSerializerOptions.Standard), bytes.ToArray());
        Assert.Equal(16, segments); // 1,000,005 bytes in 64 KiB segments.
        pool.ReturnChain(first);
    }

    [Fact]
    public void TheMuxResolver_ReplacesMessagePacksOwnBytesFormatters_ButKeepsAUsersOwn()
    {
        IMessagePackFormatter<byte[]>? standard = StandardResolver.Instance.GetFormatter<byte[]>();
        IMessagePackFormatter<byte[]>? mux = s_mux.Resolver.GetFormatter<byte[]>();
        var users = new UsersBytesFormatter();
        IFormatterResolver custom = CompositeResolver.Create([users], [StandardResolver.Instance]);

        Assert.NotNull(mux);
        Assert.NotSame(standard, mux);
        Assert.NotSame(standard, s_mux.Resolver.GetFormatter<ReadOnlyMemory<byte>>());
        Assert.Same(users, MuxSerializerOptions.ForClient(MessagePackSerializerOptions.Standard.WithResolver(custom)).Resolver.GetFormatter<byte[]>());
        Assert.Same(StandardResolver.Instance.GetFormatter<string>(), s_mux.Resolver.GetFormatter<string>());
    }

    private static void AssertSameBytes<T>(T value, Func<T, MessagePackSerializerOptions, byte[]> serialize, int length)
    {
        byte[] expected = serialize(value, MessagePackSerializerOptions.Standard);
        byte[] actual = serialize(value, s_mux);
        Assert.True(expected.AsSpan().SequenceEqual(actual), $"{typeof(T).Name} of {length} bytes: Mux wrote {actual.Length} bytes, MessagePack {expected.Length}; first byte {actual.FirstOrDefault():x2} vs {expected.FirstOrDefault():x2}.");
    }

    private static BufferSegment Last(BufferSegment first)
    {
        while (first.NextSegment is { } next)
        {
            first = next;
        }

        return first;
    }

    private sealed class UsersBytesFormatter : IMessagePackFormatter<byte[]>
    {
        public void Serialize(ref MessagePackWriter writer, byte[] value, MessagePackSerializerOptions options) => writer.WriteNil();

        public byte[] Deserialize(ref MessagePackReader reader, MessagePackSerializerOptions options) => [];
    }
}
