using System.Buffers;
using MessagePack;
using MessagePack.Formatters;

namespace Mux.Tests.Serialization;

/// <summary>
/// <see cref="MuxRepeatedStringFormatter"/> writes MessagePack's bytes and reads back equal values;
/// what it changes is only that a repeated value comes back as the same instance.
/// </summary>
public sealed class MuxRepeatedStringFormatterTests
{
    private static readonly MessagePackSerializerOptions Options = MessagePackSerializerOptions.Standard;

    public static TheoryData<string?> Values => new()
    {
        null,
        string.Empty,
        "GuangZhou",
        "Zürich – 東京 🚀",
        new string('x', 64),
        new string('y', 65),
        new string('z', 40_000),
    };

    [Theory]
    [MemberData(nameof(Values))]
    public void Serialize_WritesWhatMessagePacksStringFormatterWrites(string? value)
    {
        Assert.Equal(Write(NullableStringFormatter.Instance, value), Write(new MuxRepeatedStringFormatter(), value));
    }

    [Theory]
    [MemberData(nameof(Values))]
    public void Deserialize_ReadsBackAnEqualValue_TheFirstTimeAndWhenRepeated(string? value)
    {
        var formatter = new MuxRepeatedStringFormatter();
        byte[] bytes = Write(NullableStringFormatter.Instance, value);

        Assert.Equal(value, Read(formatter, bytes));
        Assert.Equal(value, Read(formatter, bytes));
    }

    [Fact]
    public void Deserialize_OfARepeatedValue_ReturnsTheInstanceItReadBefore()
    {
        var formatter = new MuxRepeatedStringFormatter();
        byte[] bytes = Write(NullableStringFormatter.Instance, "henryfan@msn.com");

        string? first = Read(formatter, bytes);
        string? second = Read(formatter, bytes);

        Assert.Equal("henryfan@msn.com", second);
        Assert.Same(first, second);
    }

    [Fact]
    public void Deserialize_OfManyDistinctValues_ReturnsEachValueExactly()
    {
        // Far more values than entries: collisions replace entries, and every read must still be the
        // value that was written, never a neighbour that shared its entry.
        var formatter = new MuxRepeatedStringFormatter();
        for (int round = 0; round < 3; round++)
        {
            for (int i = 0; i < 1_000; i++)
            {
                string expected = "user" + i;
                Assert.Equal(expected, Read(formatter, Write(NullableStringFormatter.Instance, expected)));
            }
        }
    }

    [Fact]
    public void Deserialize_OfAStringSplitAcrossSegments_ReadsTheWholeValue()
    {
        var formatter = new MuxRepeatedStringFormatter();
        byte[] bytes = Write(NullableStringFormatter.Instance, "http://ikende.com");
        ReadOnlySequence<byte> split = Split(bytes, at: 6);

        var reader = new MessagePackReader(split);
        Assert.Equal("http://ikende.com", formatter.Deserialize(ref reader, Options));
        Assert.True(reader.End);
    }

    [Fact]
    public void AMemberThatOptsIn_RoundTripsWithTheSameBytes_AndSharesItsRepeatedValues()
    {
        List<Customer> customers = Enumerable.Range(0, 100).Select(i => new Customer { Name = "user" + i, City = "GuangZhou" }).ToList();
        byte[] bytes = MessagePackSerializer.Serialize(customers, Options);

        List<Customer> read = MessagePackSerializer.Deserialize<List<Customer>>(bytes, Options);

        Assert.Equal(bytes, MessagePackSerializer.Serialize(read, Options));
        Assert.Equal(customers.Select(c => (c.Name, c.City)), read.Select(c => (c.Name, c.City)));
        Assert.Single(read.Select(c => c.City).Distinct(ReferenceEqualityComparer.Instance));
    }

    private static byte[] Write(IMessagePackFormatter<string?> formatter, string? value)
    {
        var buffer = new ArrayBufferWriter<byte>();
        var writer = new MessagePackWriter(buffer);
        formatter.Serialize(ref writer, value, Options);
        writer.Flush();
        return buffer.WrittenSpan.ToArray();
    }

    private static string? Read(IMessagePackFormatter<string?> formatter, byte[] bytes)
    {
        var reader = new MessagePackReader(bytes);
        string? value = formatter.Deserialize(ref reader, Options);
        Assert.True(reader.End);
        return value;
    }

    private static ReadOnlySequence<byte> Split(byte[] bytes, int at)
    {
        var first = new Segment(bytes.AsMemory(0, at), 0);
        Segment last = first.Append(bytes.AsMemory(at));
        return new ReadOnlySequence<byte>(first, 0, last, last.Memory.Length);
    }

    private sealed class Segment : ReadOnlySequenceSegment<byte>
    {
        public Segment(ReadOnlyMemory<byte> memory, long runningIndex)
        {
            Memory = memory;
            RunningIndex = runningIndex;
        }

        public Segment Append(ReadOnlyMemory<byte> memory)
        {
            var next = new Segment(memory, RunningIndex + Memory.Length);
            Next = next;
            return next;
        }
    }

    /// <summary>A contract whose City repeats and opts in; Name does not.</summary>
    [MessagePackObject]
    public sealed class Customer
    {
        [Key(0)]
        public string? Name { get; set; }

        [Key(1)]
        [MessagePackFormatter(typeof(MuxRepeatedStringFormatter))]
        public string? City { get; set; }
    }
}
