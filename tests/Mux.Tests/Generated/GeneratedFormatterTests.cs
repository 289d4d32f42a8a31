using Mux.Serialization;
using static Mux.Tests.Serialization.MessagePackTestHelpers;

namespace Mux.Tests.Generated;

/// <summary>The formatters the generator writes for [MuxObject] types, byte by byte.</summary>
public sealed class GeneratedFormatterTests
{
    [Fact]
    public void Record_IsAnArrayOfItsMembers_InDeclarationOrder()
    {
        byte[] bytes = Serialize(new LineItem("ab", 3, 1.5m));

        // [ "ab", 3, "1.5" ] (decimals are written as strings).
        Assert.Equal(Hex("93 a2 61 62 03 a3 31 2e 35"), bytes);
        Assert.Equal(new LineItem("ab", 3, 1.5m), Deserialize<LineItem>(bytes));
    }

    [Fact]
    public void KeyedMembers_GoAtTheirIndex_WithNilInTheGaps()
    {
        byte[] bytes = Serialize(new Versioned { Id = 7, Name = "x", Ratio = 0.75, NotSerialized = "ignored" });

        // [ 7, nil, "x", 0.75 ]
        Assert.Equal(Hex("94 07 c0 a1 78 cb 3f e8 00 00 00 00 00 00"), bytes);
        Versioned back = Deserialize<Versioned>(bytes);
        Assert.Equal((7, "x", 0.75, "local"), (back.Id, back.Name, back.Ratio, back.NotSerialized));
    }

    [Fact]
    public void ExtraElements_AreSkipped()
    {
        // [ 7, nil, "x", 0.75, "added later", [1, 2] ]: a newer peer's contract.
        byte[] bytes = Hex("96 07 c0 a1 78 cb 3f e8 00 00 00 00 00 00 ab 61 64 64 65 64 20 6c 61 74 65 72 92 01 02");

        Versioned back = Deserialize<Versioned>(bytes);

        Assert.Equal((7, "x", 0.75), (back.Id, back.Name, back.Ratio));
    }

    [Fact]
    public void MissingElements_KeepTheirDefaults()
    {
        Versioned onlyId = Deserialize<Versioned>(Hex("91 07"));
        Assert.Equal((7, "unnamed", 0.5), (onlyId.Id, onlyId.Name, onlyId.Ratio));

        Versioned throughName = Deserialize<Versioned>(Hex("93 07 c0 a1 78"));
        Assert.Equal((7, "x", 0.5), (throughName.Id, throughName.Name, throughName.Ratio));

        LineItem shortRecord = Deserialize<LineItem>(Hex("91 a2 61 62"));
        Assert.Equal(new LineItem("ab", 0, 0m), shortRecord);
    }

    [Fact]
    public void Nil_IsNull_ForClasses()
    {
        Assert.Equal(Hex("c0"), Serialize<Order?>(null));
        Assert.Null(Deserialize<Order?>(Hex("c0")));
        Assert.Null(Deserialize<LineItem?>(Hex("c0")));
    }

    [Fact]
    public void Struct_WithAConstructor_RoundTrips()
    {
        byte[] bytes = Serialize(new Point(-1, 300));

        Assert.Equal(Hex("92 ff cd 01 2c"), bytes);
        Point back = Deserialize<Point>(bytes);
        Assert.Equal((-1, 300), (back.X, back.Y));
    }

    [Fact]
    public void Collections_AndEnums_OfTheContracts_AreRegistered()
    {
        List<LineItem> items = RoundTrip(new List<LineItem> { new("a", 1, 2m) });
        Assert.Equal([new LineItem("a", 1, 2m)], items);

        Assert.Equal([Priority.High, Priority.Low], RoundTrip(new[] { Priority.High, Priority.Low }));
        Assert.Equal(Priority.High, RoundTrip<Priority?>(Priority.High));
        Assert.IsType<EnumFormatter<Priority>>(MuxFormatterResolver.GetFormatter<Priority>());
        Assert.IsType<ListFormatter<Dictionary<string, int[]>>>(MuxFormatterResolver.GetFormatter<List<Dictionary<string, int[]>>>());
        Assert.IsType<DictionaryFormatter<string, int[]>>(MuxFormatterResolver.GetFormatter<Dictionary<string, int[]>>());
        Assert.IsType<ArrayFormatter<int>>(MuxFormatterResolver.GetFormatter<int[]>());
    }
}
