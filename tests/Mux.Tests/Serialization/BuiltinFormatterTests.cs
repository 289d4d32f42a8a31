using Mux.Serialization;
using static Mux.Tests.Serialization.MessagePackTestHelpers;

namespace Mux.Tests.Serialization;

public class BuiltinFormatterTests
{
    [Fact]
    public void Guid_IsA16ByteBinaryInRfc4122Order()
    {
        var value = new Guid("00112233-4455-6677-8899-aabbccddeeff");
        Assert.Equal(Hex("c410 00112233445566778899aabbccddeeff"), Serialize(value));
        Assert.Equal(value, RoundTrip(value));
        Guid random = Guid.NewGuid();
        Assert.Equal(random, RoundTrip(random));
        Assert.Equal(Guid.Empty, RoundTrip(Guid.Empty));
    }

    [Fact]
    public void Guid_OfTheWrongLength_IsRejected()
    {
        var ex = Assert.Throws<MuxSerializationException>(() => Deserialize<Guid>(Hex("c403 010203")));
        Assert.Contains("expected 16", ex.Message, StringComparison.Ordinal);
    }

    [Theory]
    [InlineData("0")]
    [InlineData("1.5")]
    [InlineData("-1.5")]
    [InlineData("1.10")]
    [InlineData("79228162514264337593543950335")]
    [InlineData("-79228162514264337593543950335")]
    [InlineData("0.0000000000000000000000000001")]
    [InlineData("123456789.987654321")]
    public void Decimal_RoundTrips_AsAnInvariantString_KeepingItsScale(string text)
    {
        decimal value = decimal.Parse(text, System.Globalization.CultureInfo.InvariantCulture);
        byte[] bytes = Serialize(value);
        Assert.Equal(text, new MessagePackReader(bytes).ReadString());
        decimal read = RoundTrip(value);
        Assert.Equal(value, read);
        Assert.Equal(value.Scale, read.Scale);
    }

    [Fact]
    public void Decimal_FromInvalidText_IsRejected()
    {
        Assert.Throws<MuxSerializationException>(() => Deserialize<decimal>(Hex("a3 616263")));
        Assert.Throws<MuxSerializationException>(() => Deserialize<decimal>(Hex("05")));
    }

    [Theory]
    [InlineData(0L)]
    [InlineData(1L)]
    [InlineData(-1L)]
    [InlineData(TimeSpan.TicksPerDay)]
    [InlineData(long.MaxValue)]
    [InlineData(long.MinValue)]
    public void TimeSpan_RoundTrips_AsInt64Ticks(long ticks)
    {
        var value = new TimeSpan(ticks);
        Assert.Equal(Encode((ref MessagePackWriter w) => w.Write(ticks)), Serialize(value));
        Assert.Equal(value, RoundTrip(value));
    }

    public static TheoryData<DateTimeOffset> Offsets => new()
    {
        new DateTimeOffset(2024, 3, 10, 8, 30, 0, TimeSpan.Zero),
        new DateTimeOffset(2024, 3, 10, 8, 30, 0, TimeSpan.FromMinutes(330)),
        new DateTimeOffset(2024, 3, 10, 8, 30, 0, TimeSpan.FromHours(-8)).AddTicks(1),
        new DateTimeOffset(1900, 1, 1, 0, 0, 0, TimeSpan.FromHours(14)),
        new DateTimeOffset(1900, 1, 1, 0, 0, 0, TimeSpan.FromHours(-14)),
        DateTimeOffset.MinValue,
        DateTimeOffset.MaxValue,
        new DateTimeOffset(DateTime.MinValue.AddHours(14), TimeSpan.FromHours(14)),
    };

    [Theory]
    [MemberData(nameof(Offsets))]
    public void DateTimeOffset_RoundTrips_WithItsOffset(DateTimeOffset value)
    {
        DateTimeOffset read = RoundTrip(value);
        Assert.Equal(value, read);
        Assert.Equal(value.Offset, read.Offset);
        Assert.Equal(value.DateTime, read.DateTime);
    }

    [Fact]
    public void DateTimeOffset_IsAnArrayOfUtcTimestampAndOffsetMinutes()
    {
        var value = new DateTimeOffset(1970, 1, 1, 2, 0, 1, TimeSpan.FromHours(2));
        Assert.Equal(Hex("92 d6ff00000001 78"), Serialize(value));

        var negative = new DateTimeOffset(1970, 1, 1, 0, 0, 1, TimeSpan.FromHours(-5));
        Assert.Equal(Hex("92 d6ff00004651 d1fed4"), Serialize(negative));
    }

    [Fact]
    public void DateTimeOffset_WithAnOffsetBeyond14Hours_IsRejected()
    {
        Assert.Throws<MuxSerializationException>(() => Deserialize<DateTimeOffset>(Hex("92 d6ff00000001 cd0349")));
        Assert.Throws<MuxSerializationException>(() => Deserialize<DateTimeOffset>(Hex("93 d6ff00000001 00 00")));
    }

    [Fact]
    public void DateTimeOffset_WhoseLocalTimeIsOutOfRange_IsRejected()
    {
        // 0001-01-01T00:00:00Z seen from UTC-1 would be before year 1.
        byte[] data = [0x92, .. Serialize(DateTime.SpecifyKind(DateTime.MinValue, DateTimeKind.Utc)), .. Serialize(-60)];
        Assert.Throws<MuxSerializationException>(() => Deserialize<DateTimeOffset>(data));
    }

    [Fact]
    public void NullableBuiltIns_WriteNilForNull_AndTheValueOtherwise()
    {
        Assert.Equal(Hex("c0"), Serialize<int?>(null));
        Assert.Equal(Hex("05"), Serialize<int?>(5));
        Assert.Null(RoundTrip<int?>(null));
        Assert.Equal(300, RoundTrip<int?>(300));
        Assert.Equal(true, RoundTrip<bool?>(true));
        Assert.Equal((byte)7, RoundTrip<byte?>(7));
        Assert.Equal((sbyte)-7, RoundTrip<sbyte?>(-7));
        Assert.Equal((short)-700, RoundTrip<short?>(-700));
        Assert.Equal((ushort)700, RoundTrip<ushort?>(700));
        Assert.Equal(70000u, RoundTrip<uint?>(70000u));
        Assert.Equal(long.MinValue, RoundTrip<long?>(long.MinValue));
        Assert.Equal(ulong.MaxValue, RoundTrip<ulong?>(ulong.MaxValue));
        Assert.Equal(1.5f, RoundTrip<float?>(1.5f));
        Assert.Equal(2.5d, RoundTrip<double?>(2.5d));
        Assert.Equal('x', RoundTrip<char?>('x'));
        Assert.Equal(1.25m, RoundTrip<decimal?>(1.25m));
        Assert.Equal(TimeSpan.FromSeconds(3), RoundTrip<TimeSpan?>(TimeSpan.FromSeconds(3)));
        Guid guid = Guid.NewGuid();
        Assert.Equal(guid, RoundTrip<Guid?>(guid));
        DateTime now = DateTime.UtcNow;
        Assert.Equal(now, RoundTrip<DateTime?>(now));
        DateTimeOffset offset = DateTimeOffset.Now;
        Assert.Equal(offset, RoundTrip<DateTimeOffset?>(offset));
        Assert.Null(RoundTrip<DateTimeOffset?>(null));
        Assert.Null(RoundTrip<Guid?>(null));
        Assert.Null(RoundTrip<decimal?>(null));
    }

    [Fact]
    public void EveryBuiltInType_HasAFormatter()
    {
        Assert.NotNull(MuxFormatterResolver.GetFormatter<bool>());
        Assert.NotNull(MuxFormatterResolver.GetFormatter<byte>());
        Assert.NotNull(MuxFormatterResolver.GetFormatter<sbyte>());
        Assert.NotNull(MuxFormatterResolver.GetFormatter<short>());
        Assert.NotNull(MuxFormatterResolver.GetFormatter<ushort>());
        Assert.NotNull(MuxFormatterResolver.GetFormatter<int>());
        Assert.NotNull(MuxFormatterResolver.GetFormatter<uint>());
        Assert.NotNull(MuxFormatterResolver.GetFormatter<long>());
        Assert.NotNull(MuxFormatterResolver.GetFormatter<ulong>());
        Assert.NotNull(MuxFormatterResolver.GetFormatter<float>());
        Assert.NotNull(MuxFormatterResolver.GetFormatter<double>());
        Assert.NotNull(MuxFormatterResolver.GetFormatter<char>());
        Assert.NotNull(MuxFormatterResolver.GetFormatter<string>());
        Assert.NotNull(MuxFormatterResolver.GetFormatter<byte[]>());
        Assert.NotNull(MuxFormatterResolver.GetFormatter<DateTime>());
        Assert.NotNull(MuxFormatterResolver.GetFormatter<DateTimeOffset>());
        Assert.NotNull(MuxFormatterResolver.GetFormatter<TimeSpan>());
        Assert.NotNull(MuxFormatterResolver.GetFormatter<Guid>());
        Assert.NotNull(MuxFormatterResolver.GetFormatter<decimal>());
        Assert.NotNull(MuxFormatterResolver.GetFormatter<bool?>());
        Assert.NotNull(MuxFormatterResolver.GetFormatter<byte?>());
        Assert.NotNull(MuxFormatterResolver.GetFormatter<sbyte?>());
        Assert.NotNull(MuxFormatterResolver.GetFormatter<short?>());
        Assert.NotNull(MuxFormatterResolver.GetFormatter<ushort?>());
        Assert.NotNull(MuxFormatterResolver.GetFormatter<int?>());
        Assert.NotNull(MuxFormatterResolver.GetFormatter<uint?>());
        Assert.NotNull(MuxFormatterResolver.GetFormatter<long?>());
        Assert.NotNull(MuxFormatterResolver.GetFormatter<ulong?>());
        Assert.NotNull(MuxFormatterResolver.GetFormatter<float?>());
        Assert.NotNull(MuxFormatterResolver.GetFormatter<double?>());
        Assert.NotNull(MuxFormatterResolver.GetFormatter<char?>());
        Assert.NotNull(MuxFormatterResolver.GetFormatter<DateTime?>());
        Assert.NotNull(MuxFormatterResolver.GetFormatter<DateTimeOffset?>());
        Assert.NotNull(MuxFormatterResolver.GetFormatter<TimeSpan?>());
        Assert.NotNull(MuxFormatterResolver.GetFormatter<Guid?>());
        Assert.NotNull(MuxFormatterResolver.GetFormatter<decimal?>());
    }
}
