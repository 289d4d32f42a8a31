using Mux.Serialization;
using static Mux.Tests.Serialization.MessagePackTestHelpers;

namespace Mux.Tests.Serialization;

public class IntegerEncodingTests
{
    // Every value at or next to a boundary between two MessagePack integer encodings.
    private static readonly long[] s_signedBoundaries =
    [
        0, 1, 127, 128, 255, 256, 32767, 32768, 65535, 65536, int.MaxValue, (long)int.MaxValue + 1, uint.MaxValue, (long)uint.MaxValue + 1,
        -1, -32, -33, -127, -128, -129, -32768, -32769, int.MinValue, (long)int.MinValue - 1, long.MinValue, long.MaxValue,
    ];

    private static readonly ulong[] s_unsignedBoundaries =
    [
        0, 127, 128, 255, 256, 65535, 65536, uint.MaxValue, (ulong)uint.MaxValue + 1, long.MaxValue, (ulong)long.MaxValue + 1, ulong.MaxValue,
    ];

    [Theory]
    [InlineData(0L, "00")]
    [InlineData(127L, "7f")]
    [InlineData(128L, "cc80")]
    [InlineData(255L, "ccff")]
    [InlineData(256L, "cd0100")]
    [InlineData(65535L, "cdffff")]
    [InlineData(65536L, "ce00010000")]
    [InlineData(4294967295L, "ceffffffff")]
    [InlineData(4294967296L, "cf0000000100000000")]
    [InlineData(-1L, "ff")]
    [InlineData(-32L, "e0")]
    [InlineData(-33L, "d0df")]
    [InlineData(-128L, "d080")]
    [InlineData(-129L, "d1ff7f")]
    [InlineData(-32768L, "d18000")]
    [InlineData(-32769L, "d2ffff7fff")]
    [InlineData(-2147483648L, "d280000000")]
    [InlineData(-2147483649L, "d3ffffffff7fffffff")]
    [InlineData(long.MinValue, "d38000000000000000")]
    [InlineData(long.MaxValue, "cf7fffffffffffffff")]
    public void Int64_IsWrittenInTheSmallestEncoding(long value, string expectedHex)
    {
        Assert.Equal(Hex(expectedHex), Encode((ref MessagePackWriter w) => w.Write(value)));
    }

    [Fact]
    public void UInt64_MaxValue_IsWrittenAsUInt64()
    {
        Assert.Equal(Hex("cfffffffffffffffff"), Encode((ref MessagePackWriter w) => w.Write(ulong.MaxValue)));
    }

    [Fact]
    public void EveryIntegerType_WritesTheSameBytesForTheSameValue()
    {
        // The encoding depends on the value only, never on the C# type it came from.
        Assert.Equal(Hex("cc80"), Encode((ref MessagePackWriter w) => w.Write((byte)128)));
        Assert.Equal(Hex("cc80"), Encode((ref MessagePackWriter w) => w.Write((short)128)));
        Assert.Equal(Hex("cc80"), Encode((ref MessagePackWriter w) => w.Write((ushort)128)));
        Assert.Equal(Hex("cc80"), Encode((ref MessagePackWriter w) => w.Write(128)));
        Assert.Equal(Hex("cc80"), Encode((ref MessagePackWriter w) => w.Write(128u)));
        Assert.Equal(Hex("cc80"), Encode((ref MessagePackWriter w) => w.Write(128UL)));
        Assert.Equal(Hex("d0df"), Encode((ref MessagePackWriter w) => w.Write((sbyte)-33)));
        Assert.Equal(Hex("d0df"), Encode((ref MessagePackWriter w) => w.Write((short)-33)));
        Assert.Equal(Hex("ff"), Encode((ref MessagePackWriter w) => w.Write(-1)));
        Assert.Equal(Hex("05"), Encode((ref MessagePackWriter w) => w.Write((byte)5)));
    }

    [Fact]
    public void Char_IsWrittenAsItsUInt16CodeUnit()
    {
        Assert.Equal(Hex("41"), Encode((ref MessagePackWriter w) => w.Write('A')));
        Assert.Equal(Hex("cd20ac"), Encode((ref MessagePackWriter w) => w.Write('€')));
        Assert.Equal('€', Deserialize<char>(Hex("cd20ac")));
    }

    [Fact]
    public void Byte_RoundTrips_AtEveryEncodingBoundary() => AssertSignedRoundTrips(byte.MinValue, byte.MaxValue, v => Encode((ref MessagePackWriter w) => w.Write((byte)v)), (ref MessagePackReader r) => r.ReadByte());

    [Fact]
    public void SByte_RoundTrips_AtEveryEncodingBoundary() => AssertSignedRoundTrips(sbyte.MinValue, sbyte.MaxValue, v => Encode((ref MessagePackWriter w) => w.Write((sbyte)v)), (ref MessagePackReader r) => r.ReadSByte());

    [Fact]
    public void Int16_RoundTrips_AtEveryEncodingBoundary() => AssertSignedRoundTrips(short.MinValue, short.MaxValue, v => Encode((ref MessagePackWriter w) => w.Write((short)v)), (ref MessagePackReader r) => r.ReadInt16());

    [Fact]
    public void UInt16_RoundTrips_AtEveryEncodingBoundary() => AssertSignedRoundTrips(ushort.MinValue, ushort.MaxValue, v => Encode((ref MessagePackWriter w) => w.Write((ushort)v)), (ref MessagePackReader r) => r.ReadUInt16());

    [Fact]
    public void Char_RoundTrips_AtEveryEncodingBoundary() => AssertSignedRoundTrips(char.MinValue, char.MaxValue, v => Encode((ref MessagePackWriter w) => w.Write((char)v)), (ref MessagePackReader r) => r.ReadChar());

    [Fact]
    public void Int32_RoundTrips_AtEveryEncodingBoundary() => AssertSignedRoundTrips(int.MinValue, int.MaxValue, v => Encode((ref MessagePackWriter w) => w.Write((int)v)), (ref MessagePackReader r) => r.ReadInt32());

    [Fact]
    public void UInt32_RoundTrips_AtEveryEncodingBoundary() => AssertSignedRoundTrips(uint.MinValue, uint.MaxValue, v => Encode((ref MessagePackWriter w) => w.Write((uint)v)), (ref MessagePackReader r) => r.ReadUInt32());

    [Fact]
    public void Int64_RoundTrips_AtEveryEncodingBoundary() => AssertSignedRoundTrips(long.MinValue, long.MaxValue, v => Encode((ref MessagePackWriter w) => w.Write(v)), (ref MessagePackReader r) => r.ReadInt64());

    [Fact]
    public void UInt64_RoundTrips_AtEveryEncodingBoundary()
    {
        foreach (ulong value in s_unsignedBoundaries)
        {
            byte[] bytes = Encode((ref MessagePackWriter w) => w.Write(value));
            Assert.Equal(ExpectedLength(value), bytes.Length);
            var reader = new MessagePackReader(bytes);
            Assert.Equal(MessagePackType.Integer, reader.NextType);
            Assert.Equal(value, reader.ReadUInt64());
            Assert.True(reader.End);
            Assert.Equal(value, RoundTrip(value));
        }
    }

    [Fact]
    public void BuiltInIntegerFormatters_RoundTrip_AtEveryEncodingBoundary()
    {
        foreach (long value in s_signedBoundaries)
        {
            Assert.Equal(value, RoundTrip(value));
            if (value is >= int.MinValue and <= int.MaxValue)
            {
                Assert.Equal((int)value, RoundTrip((int)value));
            }

            if (value is >= 0 and <= uint.MaxValue)
            {
                Assert.Equal((uint)value, RoundTrip((uint)value));
            }

            if (value is >= short.MinValue and <= short.MaxValue)
            {
                Assert.Equal((short)value, RoundTrip((short)value));
            }

            if (value is >= 0 and <= ushort.MaxValue)
            {
                Assert.Equal((ushort)value, RoundTrip((ushort)value));
            }

            if (value is >= sbyte.MinValue and <= sbyte.MaxValue)
            {
                Assert.Equal((sbyte)value, RoundTrip((sbyte)value));
            }

            if (value is >= 0 and <= byte.MaxValue)
            {
                Assert.Equal((byte)value, RoundTrip((byte)value));
            }
        }
    }

    [Theory]
    [InlineData("d30000000000000005")] // int64
    [InlineData("cf0000000000000005")] // uint64
    [InlineData("d200000005")] // int32
    [InlineData("ce00000005")] // uint32
    [InlineData("d10005")] // int16
    [InlineData("cd0005")] // uint16
    [InlineData("d005")] // int8
    [InlineData("cc05")] // uint8
    [InlineData("05")] // positive fixint
    public void EveryIntegerRead_AcceptsAnyEncodingWhoseValueFits(string hex)
    {
        byte[] data = Hex(hex);
        Assert.Equal(5, new MessagePackReader(data).ReadByte());
        Assert.Equal(5, new MessagePackReader(data).ReadSByte());
        Assert.Equal(5, new MessagePackReader(data).ReadInt16());
        Assert.Equal(5, new MessagePackReader(data).ReadUInt16());
        Assert.Equal(5, new MessagePackReader(data).ReadInt32());
        Assert.Equal(5u, new MessagePackReader(data).ReadUInt32());
        Assert.Equal(5L, new MessagePackReader(data).ReadInt64());
        Assert.Equal(5UL, new MessagePackReader(data).ReadUInt64());
        Assert.Equal((char)5, new MessagePackReader(data).ReadChar());
        Assert.Equal(5f, new MessagePackReader(data).ReadSingle());
        Assert.Equal(5d, new MessagePackReader(data).ReadDouble());
    }

    [Fact]
    public void NegativeValues_InWideEncodings_AreReadAsSmallTypes()
    {
        Assert.Equal(-1, new MessagePackReader(Hex("d3ffffffffffffffff")).ReadSByte());
        Assert.Equal(-2, new MessagePackReader(Hex("d2fffffffe")).ReadInt16());
        Assert.Equal(-100, new MessagePackReader(Hex("d1ff9c")).ReadInt32());
    }

    [Theory]
    [InlineData("cd012c", "Byte", "300")]
    [InlineData("ff", "Byte", "-1")]
    [InlineData("cc80", "SByte", "128")]
    [InlineData("d1ff7f", "SByte", "-129")]
    [InlineData("cd8000", "Int16", "32768")]
    [InlineData("d2ffff7fff", "Int16", "-32769")]
    [InlineData("ce00010000", "UInt16", "65536")]
    [InlineData("ce00010000", "Char", "65536")]
    [InlineData("ce80000000", "Int32", "2147483648")]
    [InlineData("d3ffffffff7fffffff", "Int32", "-2147483649")]
    [InlineData("cf0000000100000000", "UInt32", "4294967296")]
    [InlineData("e0", "UInt32", "-32")]
    [InlineData("cfffffffffffffffff", "Int64", "18446744073709551615")]
    [InlineData("d38000000000000000", "UInt64", "-9223372036854775808")]
    public void ReadingAnIntegerThatDoesNotFit_Throws_WithTheValueAndTargetTypeInTheMessage(string hex, string target, string value)
    {
        byte[] data = Hex(hex);
        var ex = Assert.Throws<MuxSerializationException>(() =>
        {
            var reader = new MessagePackReader(data);
            switch (target)
            {
                case "Byte": reader.ReadByte(); break;
                case "SByte": reader.ReadSByte(); break;
                case "Int16": reader.ReadInt16(); break;
                case "UInt16": reader.ReadUInt16(); break;
                case "Char": reader.ReadChar(); break;
                case "Int32": reader.ReadInt32(); break;
                case "UInt32": reader.ReadUInt32(); break;
                case "Int64": reader.ReadInt64(); break;
                default: reader.ReadUInt64(); break;
            }
        });
        Assert.Contains($"value {value} does not fit in {target}", ex.Message, StringComparison.Ordinal);
    }

    [Fact]
    public void ReadByte_Of300_ThrowsTheDocumentedMessage()
    {
        var ex = Assert.Throws<MuxSerializationException>(() => new MessagePackReader(Hex("cd012c")).ReadByte());
        Assert.Equal("MessagePack integer at offset 0: value 300 does not fit in Byte.", ex.Message);
    }

    private static void AssertSignedRoundTrips<T>(long min, long max, Func<long, byte[]> encode, ReadFunc<T> read)
        where T : IComparable<T>
    {
        int tested = 0;
        foreach (long value in s_signedBoundaries)
        {
            if (value < min || value > max)
            {
                continue;
            }

            byte[] bytes = encode(value);
            Assert.Equal(ExpectedLength(value), bytes.Length);
            var reader = new MessagePackReader(bytes);
            T read1 = read(ref reader);
            Assert.Equal(value, Convert.ToInt64(read1, System.Globalization.CultureInfo.InvariantCulture));
            Assert.True(reader.End);

            // Any wider read sees the same value.
            Assert.Equal(value, new MessagePackReader(bytes).ReadInt64());
            tested++;
        }

        Assert.True(tested >= 4);
    }

    private static int ExpectedLength(long value) => value >= 0
        ? ExpectedLength((ulong)value)
        : value >= -32 ? 1 : value >= sbyte.MinValue ? 2 : value >= short.MinValue ? 3 : value >= int.MinValue ? 5 : 9;

    private static int ExpectedLength(ulong value) =>
        value <= 127 ? 1 : value <= byte.MaxValue ? 2 : value <= ushort.MaxValue ? 3 : value <= uint.MaxValue ? 5 : 9;

    private delegate T ReadFunc<T>(ref MessagePackReader reader);
}
