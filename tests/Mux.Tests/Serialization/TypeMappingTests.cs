using MessagePack;
using Mux.Serialization;

namespace Mux.Tests.Serialization;

/// <summary>The type table of docs/protocol.md ("Bodies"), checked byte for byte against what a Mux
/// connection writes, so the document cannot drift from the code.</summary>
public sealed class TypeMappingTests
{
    private static readonly MessagePackSerializerOptions s_mux = MuxSerializerOptions.ForClient(MessagePackSerializerOptions.Standard);

    private static string Hex<T>(T value) => Convert.ToHexString(MessagePackSerializer.Serialize(value, s_mux));

    [Fact]
    public void Integers_TakeTheirSmallestForm_WhateverTheirType()
    {
        Assert.Equal("05", Hex(5L));
        Assert.Equal("CCC8", Hex((ushort)200));
        Assert.Equal("F6", Hex(-10));
        Assert.Equal("D09C", Hex(-100));
        Assert.Equal("920203", Hex((2, 3)));
    }

    [Fact]
    public void Decimal_IsItsInvariantText()
    {
        Assert.Equal("A5" + Convert.ToHexString("12.50"u8), Hex(12.50m));
    }

    [Fact]
    public void Guid_IsTheDFormatString()
    {
        var id = Guid.Parse("6f9619ff-8b86-d011-b42d-00c04fc964ff");
        Assert.Equal("D924" + Convert.ToHexString("6f9619ff-8b86-d011-b42d-00c04fc964ff"u8), Hex(id));
    }

    [Fact]
    public void DateTime_IsATimestampOfTheUtcInstant_AndComesBackAsUtc()
    {
        var utc = new DateTime(2024, 5, 6, 7, 8, 9, DateTimeKind.Utc);
        var unspecified = DateTime.SpecifyKind(utc, DateTimeKind.Unspecified);

        Assert.StartsWith("D6FF", Hex(utc), StringComparison.Ordinal); // timestamp 32: ext -1
        Assert.Equal(Hex(utc), Hex(unspecified));
        Assert.Equal(Hex(utc), Hex(utc.ToLocalTime()));
        DateTime back = MessagePackSerializer.Deserialize<DateTime>(MessagePackSerializer.Serialize(utc.ToLocalTime(), s_mux), s_mux);
        Assert.Equal((utc, DateTimeKind.Utc), (back, back.Kind));
    }

    [Fact]
    public void DateTimeOffset_IsItsClockTimeAndOffsetInMinutes_AndKeepsBoth()
    {
        var placed = new DateTimeOffset(2024, 5, 6, 9, 8, 9, TimeSpan.FromHours(2));

        string hex = Hex(placed);
        Assert.StartsWith("92D6FF", hex, StringComparison.Ordinal); // [timestamp, offset]
        Assert.EndsWith("78", hex, StringComparison.Ordinal);       // 120 minutes
        DateTimeOffset back = MessagePackSerializer.Deserialize<DateTimeOffset>(MessagePackSerializer.Serialize(placed, s_mux), s_mux);
        Assert.Equal((placed, placed.Offset), (back, back.Offset));
    }

    [Fact]
    public void TimeSpan_IsItsTicks()
    {
        Assert.Equal(Hex(TimeSpan.FromSeconds(1).Ticks), Hex(TimeSpan.FromSeconds(1)));
    }

    [Fact]
    public void Bytes_AreBin_AndNullIsNil()
    {
        Assert.Equal("C403010203", Hex(new byte[] { 1, 2, 3 }));
        Assert.Equal("C403010203", Hex(new ReadOnlyMemory<byte>([1, 2, 3])));
        Assert.Equal("C0", Hex<string?>(null));
        Assert.Equal("C0", Hex<int?>(null));
    }
}
