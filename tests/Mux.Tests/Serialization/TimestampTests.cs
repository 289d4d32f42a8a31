using Mux.Serialization;
using static Mux.Tests.Serialization.MessagePackTestHelpers;

namespace Mux.Tests.Serialization;

public class TimestampTests
{
    private static readonly DateTime s_epoch = new(1970, 1, 1, 0, 0, 0, DateTimeKind.Utc);

    [Fact]
    public void Timestamp32_IsUsed_ForWholeSecondsFrom1970To2106()
    {
        Assert.Equal(Hex("d6ff 00000000"), Serialize(s_epoch));
        Assert.Equal(Hex("d6ff 00000001"), Serialize(s_epoch.AddSeconds(1)));
        Assert.Equal(Hex("d6ff ffffffff"), Serialize(s_epoch.AddSeconds(uint.MaxValue)));
        Assert.Equal(Hex("d6ff 65920080"), Serialize(new DateTime(2024, 1, 1, 0, 0, 0, DateTimeKind.Utc)));
    }

    [Fact]
    public void Timestamp64_IsUsed_ForFractionsOrSecondsBeyond32Bits()
    {
        // 100 ns: nanoseconds in the upper 30 bits, seconds in the lower 34.
        Assert.Equal(Hex("d7ff 0000019000000000"), Serialize(s_epoch.AddTicks(1)));

        // 2^32 seconds with no fraction no longer fits timestamp 32.
        Assert.Equal(Hex("d7ff 0000000100000000"), Serialize(s_epoch.AddSeconds(4294967296d)));

        // The last representable instant of timestamp 64: 2^34 - 1 seconds and 999999900 ns.
        DateTime last = s_epoch.AddSeconds(17179869183d).AddTicks(9_999_999);
        ulong packed = (999_999_900UL << 34) | 17179869183UL;
        Assert.Equal([0xd7, 0xff, .. BigEndian(packed)], Serialize(last));
    }

    [Fact]
    public void Timestamp96_IsUsed_BeforeTheEpoch_AndFrom2514()
    {
        Assert.Equal(Hex("c70cff 00000000 ffffffffffffffff"), Serialize(s_epoch.AddSeconds(-1)));
        Assert.Equal(Hex("c70cff 3b9ac99c ffffffffffffffff"), Serialize(s_epoch.AddTicks(-1)));
        Assert.Equal(Hex("c70cff 00000000 0000000400000000"), Serialize(s_epoch.AddSeconds(17179869184d)));
    }

    public static TheoryData<DateTime> Instants => new()
    {
        s_epoch,
        s_epoch.AddTicks(1),
        s_epoch.AddTicks(-1),
        new DateTime(2024, 2, 29, 13, 45, 12, DateTimeKind.Utc).AddTicks(1234567),
        new DateTime(2106, 2, 7, 6, 28, 15, DateTimeKind.Utc),
        new DateTime(2106, 2, 7, 6, 28, 16, DateTimeKind.Utc),
        new DateTime(2514, 5, 30, 1, 53, 4, DateTimeKind.Utc),
        new DateTime(1, 1, 1, 0, 0, 0, DateTimeKind.Utc),
        DateTime.SpecifyKind(DateTime.MinValue, DateTimeKind.Utc),
        DateTime.SpecifyKind(DateTime.MaxValue, DateTimeKind.Utc),
    };

    [Theory]
    [MemberData(nameof(Instants))]
    public void DateTime_RoundTrips_AsUtc(DateTime value)
    {
        DateTime read = RoundTrip(value);
        Assert.Equal(value, read);
        Assert.Equal(DateTimeKind.Utc, read.Kind);
    }

    [Fact]
    public void LocalDateTime_IsConvertedToUtc()
    {
        var local = new DateTime(2024, 6, 1, 12, 0, 0, DateTimeKind.Local);
        DateTime read = RoundTrip(local);
        Assert.Equal(local.ToUniversalTime(), read);
        Assert.Equal(DateTimeKind.Utc, read.Kind);
    }

    [Fact]
    public void UnspecifiedDateTime_IsTakenAsUtc()
    {
        var unspecified = new DateTime(2024, 6, 1, 12, 0, 0, DateTimeKind.Unspecified);
        Assert.Equal(unspecified.Ticks, RoundTrip(unspecified).Ticks);
    }

    [Fact]
    public void Timestamp_WithNanosecondsOfOneBillionOrMore_IsRejected()
    {
        ulong packed = 1_000_000_000UL << 34;
        byte[] data = [0xd7, 0xff, .. BigEndian(packed)];
        Assert.Throws<MuxSerializationException>(() => new MessagePackReader(data).ReadDateTime());
    }

    [Fact]
    public void Timestamp_OutsideTheRangeOfDateTime_IsRejected()
    {
        Assert.Throws<MuxSerializationException>(() => new MessagePackReader(Hex("c70cff 00000000 7fffffffffffffff")).ReadDateTime());
        Assert.Throws<MuxSerializationException>(() => new MessagePackReader(Hex("c70cff 00000000 8000000000000000")).ReadDateTime());
    }

    [Fact]
    public void ExtensionOfAnotherType_IsNotATimestamp()
    {
        var ex = Assert.Throws<MuxSerializationException>(() => new MessagePackReader(Hex("d605 00000000")).ReadDateTime());
        Assert.Contains("extension type 5", ex.Message, StringComparison.Ordinal);
    }

    [Fact]
    public void Timestamp_WithAnUnsupportedLength_IsRejected()
    {
        Assert.Throws<MuxSerializationException>(() => new MessagePackReader(Hex("d5ff 0000")).ReadDateTime());
    }

    private static byte[] BigEndian(ulong value)
    {
        byte[] bytes = new byte[8];
        System.Buffers.Binary.BinaryPrimitives.WriteUInt64BigEndian(bytes, value);
        return bytes;
    }
}
