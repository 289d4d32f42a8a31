using Mux.Serialization;
using static Mux.Tests.Serialization.MessagePackTestHelpers;

namespace Mux.Tests.Serialization;

public class MessagePackReaderTests
{
    [Fact]
    public void NextType_ClassifiesEveryTypeByte()
    {
        for (int code = 0; code <= 0xff; code++)
        {
            MessagePackType expected = code switch
            {
                <= 0x7f => MessagePackType.Integer,
                <= 0x8f => MessagePackType.Map,
                <= 0x9f => MessagePackType.Array,
                <= 0xbf => MessagePackType.String,
                0xc0 => MessagePackType.Nil,
                0xc1 => MessagePackType.Unknown,
                0xc2 or 0xc3 => MessagePackType.Boolean,
                0xc4 or 0xc5 or 0xc6 => MessagePackType.Binary,
                0xc7 or 0xc8 or 0xc9 => MessagePackType.Extension,
                0xca or 0xcb => MessagePackType.Float,
                >= 0xcc and <= 0xd3 => MessagePackType.Integer,
                >= 0xd4 and <= 0xd8 => MessagePackType.Extension,
                0xd9 or 0xda or 0xdb => MessagePackType.String,
                0xdc or 0xdd => MessagePackType.Array,
                0xde or 0xdf => MessagePackType.Map,
                _ => MessagePackType.Integer,
            };

            Assert.Equal(expected, new MessagePackReader([(byte)code]).NextType);
        }
    }

    [Fact]
    public void NextType_AtTheEnd_Throws()
    {
        var ex = Assert.Throws<MuxSerializationException>(() => new MessagePackReader([]).NextType);
        Assert.Equal("Unexpected end of MessagePack data at offset 0; needed 1 more bytes.", ex.Message);
    }

    [Fact]
    public void TruncatedInteger_ThrowsWithOffsetAndMissingByteCount()
    {
        byte[] data = Hex("01 cd01");
        var ex = Assert.Throws<MuxSerializationException>(() =>
        {
            var reader = new MessagePackReader(data);
            reader.ReadInt32();
            reader.ReadInt32();
        });
        Assert.Equal("Unexpected end of MessagePack data at offset 1; needed 1 more bytes.", ex.Message);
    }

    [Fact]
    public void WrongType_ThrowsWithExpectedTypeActualByteAndOffset()
    {
        byte[] data = [.. Enumerable.Repeat((byte)0x01, 12), .. Hex("a5 68656c6c6f")];
        var ex = Assert.Throws<MuxSerializationException>(() =>
        {
            var reader = new MessagePackReader(data);
            for (int i = 0; i < 13; i++)
            {
                reader.ReadInt32();
            }
        });
        Assert.Equal("Expected Integer but found String (0xa5) at offset 12.", ex.Message);
    }

    [Fact]
    public void TryReadNil_ConsumesOnlyNil()
    {
        var reader = new MessagePackReader(Hex("c0 05"));
        Assert.True(reader.TryReadNil());
        Assert.Equal(1, reader.Consumed);
        Assert.False(reader.TryReadNil());
        Assert.Equal(1, reader.Consumed);
        Assert.Equal(5, reader.ReadInt32());
        Assert.True(reader.End);
    }

    [Fact]
    public void ReadNil_OfAnotherType_Throws()
    {
        var reader = new MessagePackReader(Hex("c0"));
        reader.ReadNil();
        Assert.True(reader.End);
        var ex = Assert.Throws<MuxSerializationException>(() => new MessagePackReader(Hex("90")).ReadNil());
        Assert.Equal("Expected Nil but found Array (0x90) at offset 0.", ex.Message);
    }

    [Fact]
    public void UnusedTypeByte_IsReportedAsUnknown()
    {
        var ex = Assert.Throws<MuxSerializationException>(() => new MessagePackReader(Hex("c1")).Skip());
        Assert.Contains("Unknown (0xc1)", ex.Message, StringComparison.Ordinal);
    }

    [Fact]
    public void ExtensionHeader_RoundTrips_ForEveryLengthForm()
    {
        int[] lengths = [0, 1, 2, 3, 4, 8, 16, 17, 255, 256, 65535, 65536];
        foreach (int length in lengths)
        {
            byte[] payload = new byte[length];
            new Random(length).NextBytes(payload);
            byte[] bytes = Encode((ref MessagePackWriter w) =>
            {
                w.WriteExtensionHeader(42, length);
                w.WriteRaw(payload);
            });

            var reader = new MessagePackReader(bytes);
            Assert.Equal(MessagePackType.Extension, reader.NextType);
            (sbyte typeCode, int readLength) = reader.ReadExtensionHeader();
            Assert.Equal(42, typeCode);
            Assert.Equal(length, readLength);
            Assert.Equal(payload, reader.ReadRaw(readLength).ToArray());
            Assert.True(reader.End);
        }
    }

    [Fact]
    public void ExtensionHeader_UsesFixExtWhenItCan()
    {
        Assert.Equal(Hex("d4 05"), Encode((ref MessagePackWriter w) => w.WriteExtensionHeader(5, 1)));
        Assert.Equal(Hex("d8 fb"), Encode((ref MessagePackWriter w) => w.WriteExtensionHeader(-5, 16)));
        Assert.Equal(Hex("c7 03 05"), Encode((ref MessagePackWriter w) => w.WriteExtensionHeader(5, 3)));
        Assert.Equal(Hex("c8 0100 05"), Encode((ref MessagePackWriter w) => w.WriteExtensionHeader(5, 256)));
        Assert.Equal(Hex("c9 00010000 05"), Encode((ref MessagePackWriter w) => w.WriteExtensionHeader(5, 65536)));
    }

    [Fact]
    public void Skip_SkipsOneCompleteValueOfEveryType()
    {
        byte[] value = CompositeValue();
        byte[] data = [.. value, 0x2a];
        var reader = new MessagePackReader(data);
        reader.Skip();
        Assert.Equal(value.Length, reader.Consumed);
        Assert.Equal(42, reader.ReadInt32());
        Assert.True(reader.End);
    }

    [Fact]
    public void ReadRawValue_ReturnsTheEncodedBytesOfOneValue()
    {
        byte[] value = CompositeValue();
        var reader = new MessagePackReader([.. value, 0xc0]);
        Assert.Equal(value, reader.ReadRawValue().ToArray());
        reader.ReadNil();
    }

    [Fact]
    public void Skip_HandlesNestingFarDeeperThanTheStackCouldRecurse()
    {
        const int depth = 100_000;
        byte[] data = new byte[depth + 2];
        Array.Fill(data, (byte)0x91, 0, depth);
        data[depth] = 0x2a;
        data[depth + 1] = 0x07;

        var reader = new MessagePackReader(data);
        reader.Skip();
        Assert.Equal(depth + 1, reader.Consumed);
        Assert.Equal(7, reader.ReadInt32());
    }

    [Fact]
    public void Skip_AtEveryCutPointOfACompositeValue_ThrowsMuxSerializationException()
    {
        AssertEveryTruncationThrows(CompositeValue(), (ref MessagePackReader r) => r.Skip());
    }

    [Fact]
    public void TypedReads_AtEveryCutPointOfACompositeValue_ThrowMuxSerializationException()
    {
        AssertEveryTruncationThrows(CompositeValue(), ReadComposite);

        // Sanity check: the whole value reads cleanly with the same code.
        var reader = new MessagePackReader(CompositeValue());
        ReadComposite(ref reader);
        Assert.True(reader.End);
    }

    [Fact]
    public void Formatters_AtEveryCutPoint_ThrowMuxSerializationException()
    {
        MuxFormatterResolver.TryRegister(new ListFormatter<DateTime>());
        var dictionary = new DictionaryFormatter<string, List<DateTime>?>();
        byte[] data = Serialize(dictionary, new Dictionary<string, List<DateTime>?>
        {
            ["a"] = [DateTime.UnixEpoch, DateTime.UnixEpoch.AddTicks(1), DateTime.UnixEpoch.AddTicks(-1)],
            [new string('k', 40)] = null,
        });
        AssertEveryTruncationThrows(data, (ref MessagePackReader r) => dictionary.Deserialize(ref r));

        AssertEveryTruncationThrows(Serialize(DateTimeOffset.Now), (ref MessagePackReader r) => MuxFormatterResolver.GetFormatter<DateTimeOffset>().Deserialize(ref r));
        AssertEveryTruncationThrows(Serialize(Guid.NewGuid()), (ref MessagePackReader r) => MuxFormatterResolver.GetFormatter<Guid>().Deserialize(ref r));
        AssertEveryTruncationThrows(Serialize(-123.456m), (ref MessagePackReader r) => MuxFormatterResolver.GetFormatter<decimal>().Deserialize(ref r));
        AssertEveryTruncationThrows(Serialize(new string('é', 200)), (ref MessagePackReader r) => r.ReadString());
        AssertEveryTruncationThrows(Serialize(new byte[70000]), (ref MessagePackReader r) => r.ReadBinary());
    }

    [Fact]
    public void HostileArrayHeader_Claiming2Pow31Elements_ThrowsWithoutAllocatingTheList()
    {
        byte[] data = Hex("dd80000000 010203");
        var formatter = new ListFormatter<int>();
        Deserialize(formatter, Hex("9101")); // warm up so only the failing call is measured

        long before = GC.GetAllocatedBytesForCurrentThread();
        var ex = Assert.Throws<MuxSerializationException>(() =>
        {
            var reader = new MessagePackReader(data);
            formatter.Deserialize(ref reader);
        });
        long allocated = GC.GetAllocatedBytesForCurrentThread() - before;

        Assert.Equal("MessagePack array at offset 0 claims 2147483648 elements but only 3 bytes remain.", ex.Message);
        Assert.True(allocated < 100_000, $"Allocated {allocated} bytes.");
    }

    [Theory]
    [InlineData("dd7fffffff 01")] // array32
    [InlineData("df7fffffff 0101")] // map32
    [InlineData("dc0004 010203")] // array16, one element short
    [InlineData("8201 01")] // fixmap with room for one pair only
    [InlineData("dbffffffff 61")] // str32
    [InlineData("c6ffffffff 61")] // bin32
    [InlineData("c9ffffffff05 61")] // ext32
    public void HostileLengths_AreRejectedBeforeAllocating(string hex)
    {
        byte[] data = Hex(hex);
        Assert.Throws<MuxSerializationException>(() => new MessagePackReader(data).Skip());
        Assert.Throws<MuxSerializationException>(() => Deserialize(new ListFormatter<byte>(), data));
        Assert.Throws<MuxSerializationException>(() => Deserialize(new DictionaryFormatter<byte, byte>(), data));
        Assert.Throws<MuxSerializationException>(() => new MessagePackReader(data).ReadBinary());
    }

    [Fact]
    public void ReadRaw_PastTheEnd_Throws()
    {
        Assert.Throws<MuxSerializationException>(() => new MessagePackReader(Hex("0102")).ReadRaw(3).ToArray());
    }

    /// <summary>One value using every kind of encoding: a map holding scalars, nested arrays, a string, binary and extensions.</summary>
    private static byte[] CompositeValue() => Encode(static (ref MessagePackWriter w) =>
    {
        w.WriteMapHeader(5);

        w.Write("ints");
        w.WriteArrayHeader(17);
        w.Write(1);
        w.Write(-1);
        w.Write(200);
        w.Write(-100);
        w.Write(60000);
        w.Write(-30000);
        w.Write(4_000_000_000u);
        w.Write(-2_000_000_000);
        w.Write(ulong.MaxValue);
        w.Write(long.MinValue);
        w.Write(1.5f);
        w.Write(2.5d);
        w.Write(true);
        w.WriteNil();
        w.Write('x');
        w.Write((byte)255);
        w.Write((sbyte)-128);

        w.Write("times");
        w.WriteArrayHeader(3);
        w.Write(DateTime.UnixEpoch.AddSeconds(5));
        w.Write(DateTime.UnixEpoch.AddTicks(5));
        w.Write(DateTime.UnixEpoch.AddTicks(-5));

        w.Write(new string('s', 40));
        w.Write(new byte[300]);

        w.Write("nested");
        w.WriteArrayHeader(2);
        w.WriteArrayHeader(1);
        w.WriteMapHeader(1);
        w.Write(7);
        w.WriteArrayHeader(0);
        w.WriteExtensionHeader(9, 3);
        w.WriteRaw([1, 2, 3]);

        w.Write(new string('é', 100));
        w.WriteBinary([]);
    });

    private static void ReadComposite(ref MessagePackReader r)
    {
        Assert.Equal(5, r.ReadMapHeader());

        Assert.Equal("ints", r.ReadString());
        Assert.Equal(17, r.ReadArrayHeader());
        Assert.Equal(1, r.ReadInt32());
        Assert.Equal(-1, r.ReadInt32());
        Assert.Equal(200, r.ReadInt32());
        Assert.Equal(-100, r.ReadInt32());
        Assert.Equal(60000, r.ReadInt32());
        Assert.Equal(-30000, r.ReadInt32());
        Assert.Equal(4_000_000_000u, r.ReadUInt32());
        Assert.Equal(-2_000_000_000, r.ReadInt32());
        Assert.Equal(ulong.MaxValue, r.ReadUInt64());
        Assert.Equal(long.MinValue, r.ReadInt64());
        Assert.Equal(1.5f, r.ReadSingle());
        Assert.Equal(2.5d, r.ReadDouble());
        Assert.True(r.ReadBoolean());
        r.ReadNil();
        Assert.Equal('x', r.ReadChar());
        Assert.Equal(255, r.ReadByte());
        Assert.Equal(-128, r.ReadSByte());

        Assert.Equal("times", r.ReadString());
        Assert.Equal(3, r.ReadArrayHeader());
        Assert.Equal(DateTime.UnixEpoch.AddSeconds(5), r.ReadDateTime());
        Assert.Equal(DateTime.UnixEpoch.AddTicks(5), r.ReadDateTime());
        Assert.Equal(DateTime.UnixEpoch.AddTicks(-5), r.ReadDateTime());

        Assert.Equal(40, r.ReadString()!.Length);
        Assert.Equal(300, r.ReadBinary()!.Length);

        Assert.Equal("nested", r.ReadString());
        Assert.Equal(2, r.ReadArrayHeader());
        Assert.Equal(1, r.ReadArrayHeader());
        Assert.Equal(1, r.ReadMapHeader());
        Assert.Equal(7, r.ReadInt32());
        Assert.Equal(0, r.ReadArrayHeader());
        (sbyte typeCode, int length) = r.ReadExtensionHeader();
        Assert.Equal(9, typeCode);
        Assert.Equal(3, r.ReadRaw(length).Length);

        Assert.Equal(100, r.ReadString()!.Length);
        Assert.Empty(r.ReadBytes().ToArray());
    }
}
