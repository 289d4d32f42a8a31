using Mux.Serialization;
using static Mux.Tests.Serialization.MessagePackTestHelpers;

namespace Mux.Tests.Serialization;

public class CollectionFormatterTests
{
    [Fact]
    public void Array_RoundTrips_AndNullIsNil()
    {
        var formatter = new ArrayFormatter<int>();
        Assert.Equal(Hex("93 01 cc80 ff"), Serialize(formatter, [1, 128, -1]));
        Assert.Equal(new[] { 1, 128, -1 }, RoundTrip(formatter, [1, 128, -1]));
        Assert.Equal(Hex("c0"), Serialize(formatter, null));
        Assert.Null(RoundTrip(formatter, null));
        Assert.Empty(RoundTrip(formatter, [])!);
    }

    [Theory]
    [InlineData(15, "9f")]
    [InlineData(16, "dc0010")]
    [InlineData(65535, "dcffff")]
    [InlineData(65536, "dd00010000")]
    public void ArrayHeader_UsesTheSmallestEncoding(int count, string expectedHex)
    {
        Assert.Equal(Hex(expectedHex), Encode((ref MessagePackWriter w) => w.WriteArrayHeader(count)));
        string[] values = new string[count];
        Array.Fill(values, "a");
        Assert.Equal(values, RoundTrip(new ArrayFormatter<string>(), values));
    }

    [Theory]
    [InlineData(15, "8f")]
    [InlineData(16, "de0010")]
    [InlineData(65535, "deffff")]
    [InlineData(65536, "df00010000")]
    public void MapHeader_UsesTheSmallestEncoding(int count, string expectedHex)
    {
        Assert.Equal(Hex(expectedHex), Encode((ref MessagePackWriter w) => w.WriteMapHeader(count)));
        var values = new Dictionary<int, bool>();
        for (int i = 0; i < count; i++)
        {
            values[i] = i % 2 == 0;
        }

        Assert.Equal(values, RoundTrip(new DictionaryFormatter<int, bool>(), values));
    }

    [Fact]
    public void List_RoundTrips_AndNullIsNil()
    {
        var formatter = new ListFormatter<string?>();
        List<string?> value = ["a", null, "ccc", new string('x', 300)];
        List<string?>? read = RoundTrip(formatter, value);
        Assert.Equal(value, read);
        Assert.Equal(4, read!.Capacity);
        Assert.Null(RoundTrip(formatter, null));
        Assert.Empty(RoundTrip(formatter, [])!);
    }

    [Fact]
    public void Dictionary_RoundTrips_AndNullIsNil()
    {
        var formatter = new DictionaryFormatter<string, List<DateTime>?>();
        MuxFormatterResolver.TryRegister(new ListFormatter<DateTime>());
        var value = new Dictionary<string, List<DateTime>?>
        {
            ["empty"] = [],
            ["none"] = null,
            ["two"] = [new DateTime(2020, 1, 1, 0, 0, 0, DateTimeKind.Utc), new DateTime(1960, 1, 1, 0, 0, 0, DateTimeKind.Utc)],
        };

        Dictionary<string, List<DateTime>?>? read = RoundTrip(formatter, value);
        Assert.Equal(3, read!.Count);
        Assert.Empty(read["empty"]!);
        Assert.Null(read["none"]);
        Assert.Equal(value["two"], read["two"]);
        Assert.Equal(Hex("c0"), Serialize(formatter, null));
        Assert.Null(RoundTrip(formatter, null));
    }

    [Fact]
    public void Dictionary_WithANilKey_IsRejected()
    {
        var ex = Assert.Throws<MuxSerializationException>(() => Deserialize(new DictionaryFormatter<string, int>(), Hex("81 c0 01")));
        Assert.Contains("nil", ex.Message, StringComparison.Ordinal);
    }

    [Fact]
    public void Dictionary_WithARepeatedKey_KeepsTheLastValue()
    {
        Dictionary<int, int>? read = Deserialize(new DictionaryFormatter<int, int>(), Hex("82 01 02 01 03"));
        Assert.Equal(3, read![1]);
        Assert.Single(read);
    }

    [Fact]
    public void NestedCollections_RoundTrip()
    {
        MuxFormatterResolver.TryRegister(new ArrayFormatter<int>());
        var formatter = new ListFormatter<int[]?>();
        List<int[]?> value = [[1, 2], null, [], [int.MinValue]];
        Assert.Equal(value, RoundTrip(formatter, value));
    }

    [Fact]
    public void NullableFormatter_OfACustomStruct_UsesTheRegisteredFormatter()
    {
        MuxFormatterResolver.Register(new PointFormatter());
        var formatter = new NullableFormatter<Point>();
        Assert.Equal(Hex("92 01 02"), Serialize(formatter, new Point(1, 2)));
        Assert.Equal(new Point(-5, 7), RoundTrip(formatter, new Point(-5, 7)));
        Assert.Null(RoundTrip(formatter, null));
    }

    [Fact]
    public void ElementFormatter_IsResolvedOnFirstUse_NotAtConstruction()
    {
        // Created before its element formatter exists, as generated registration code may do.
        var formatter = new ArrayFormatter<LateType>();
        MuxFormatterResolver.Register(new LateTypeFormatter());
        Assert.Equal(42, RoundTrip(formatter, [new LateType(42)])![0].Value);
    }

    [Fact]
    public void ByteEnum_IsWrittenAsItsUnderlyingInteger() => AssertEnum(ByteEnum.Max, "ccff");

    [Fact]
    public void SByteEnum_IsWrittenAsItsUnderlyingInteger() => AssertEnum(SByteEnum.Negative, "ff");

    [Fact]
    public void Int16Enum_IsWrittenAsItsUnderlyingInteger() => AssertEnum(Int16Enum.Min, "d18000");

    [Fact]
    public void UInt16Enum_IsWrittenAsItsUnderlyingInteger() => AssertEnum(UInt16Enum.Max, "cdffff");

    [Fact]
    public void Int32Enum_IsWrittenAsItsUnderlyingInteger()
    {
        AssertEnum(Int32Enum.B, "01");
        AssertEnum(Int32Enum.Big, "cd012c");
        AssertEnum((Int32Enum)(-33), "d0df");
    }

    [Fact]
    public void UInt32Enum_IsWrittenAsItsUnderlyingInteger() => AssertEnum(UInt32Enum.Max, "ceffffffff");

    [Fact]
    public void Int64Enum_IsWrittenAsItsUnderlyingInteger() => AssertEnum(Int64Enum.Min, "d38000000000000000");

    [Fact]
    public void UInt64Enum_IsWrittenAsItsUnderlyingInteger() => AssertEnum(UInt64Enum.Max, "cfffffffffffffffff");

    [Fact]
    public void FlagsEnum_RoundTripsCombinedValues() => AssertEnum(FlagsEnum.A | FlagsEnum.C, "05");

    [Fact]
    public void Enum_WhoseValueDoesNotFitTheUnderlyingType_IsRejected()
    {
        var ex = Assert.Throws<MuxSerializationException>(() => Deserialize(new EnumFormatter<ByteEnum>(), Hex("cd012c")));
        Assert.Contains("does not fit in Byte", ex.Message, StringComparison.Ordinal);
    }

    private static void AssertEnum<T>(T value, string expectedHex)
        where T : struct, Enum
    {
        var formatter = new EnumFormatter<T>();
        Assert.Equal(Hex(expectedHex), Serialize(formatter, value));
        Assert.Equal(value, RoundTrip(formatter, value));
    }

    public enum ByteEnum : byte { Zero, Max = 255 }

    public enum SByteEnum : sbyte { Negative = -1, Positive = 1 }

    public enum Int16Enum : short { Min = short.MinValue }

    public enum UInt16Enum : ushort { Max = ushort.MaxValue }

    public enum Int32Enum { A, B, Big = 300 }

    public enum UInt32Enum : uint { Max = uint.MaxValue }

    public enum Int64Enum : long { Min = long.MinValue }

    public enum UInt64Enum : ulong { Max = ulong.MaxValue }

    [Flags]
    public enum FlagsEnum { None = 0, A = 1, B = 2, C = 4 }

    public readonly record struct Point(int X, int Y);

    public sealed record LateType(int Value);

    private sealed class PointFormatter : IMuxFormatter<Point>
    {
        public void Serialize(ref MessagePackWriter writer, Point value)
        {
            writer.WriteArrayHeader(2);
            writer.Write(value.X);
            writer.Write(value.Y);
        }

        public Point Deserialize(ref MessagePackReader reader)
        {
            if (reader.ReadArrayHeader() != 2)
            {
                throw new MuxSerializationException("Point needs two elements.");
            }

            return new Point(reader.ReadInt32(), reader.ReadInt32());
        }
    }

    private sealed class LateTypeFormatter : IMuxFormatter<LateType>
    {
        public void Serialize(ref MessagePackWriter writer, LateType value) => writer.Write(value.Value);

        public LateType Deserialize(ref MessagePackReader reader) => new(reader.ReadInt32());
    }
}
