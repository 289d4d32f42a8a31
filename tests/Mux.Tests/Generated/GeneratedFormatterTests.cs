using MessagePack;
using MessagePack.Formatters;
using Mux.Serialization;

namespace Mux.Tests.Generated;

/// <summary>
/// The formatters the generator writes for [MessagePackObject] and [Union] types write exactly the
/// bytes MessagePack-CSharp's own (run-time generated) formatters write, and read them back.
/// </summary>
public sealed class GeneratedFormatterTests
{
    // What a Mux connection serializes with: generated formatters first, then StandardResolver.
    private static readonly MessagePackSerializerOptions s_mux = MuxSerializerOptions.ForClient(MessagePackSerializerOptions.Standard);

    // MessagePack-CSharp on its own: DynamicObjectResolver and friends generate the formatters.
    private static readonly MessagePackSerializerOptions s_reference = MessagePackSerializerOptions.Standard;

    public static TheoryData<object> Values() => new()
    {
        new LineItem("ab", 3, 1.5m),
        new Versioned { Id = 7, Name = "x", Ratio = 0.75, NotSerialized = "ignored" },
        new Point(-1, 300),
        new Profile { Name = "Ada", Age = 36, Emails = ["ada@example.org"], Cache = "ignored" },
        new Setting { Key = "k", Value = null },
        new Money(12.5m, "USD"),
        new Circle { Radius = 2 },
        SampleOrder(),
        SampleEverything(),
    };

    [Theory]
    [MemberData(nameof(Values))]
    public void GeneratedFormatter_WritesTheBytesMessagePackWrites_AndReadsThemBack(object value)
    {
        byte[] mux = SerializeWith(s_mux, value);
        byte[] reference = SerializeWith(s_reference, value);

        Assert.Equal(Convert.ToHexString(reference), Convert.ToHexString(mux));
        object? back = MessagePackSerializer.Deserialize(value.GetType(), reference, s_mux);
        Assert.Equal(Convert.ToHexString(reference), Convert.ToHexString(SerializeWith(s_reference, back!)));
    }

    [Fact]
    public void Union_IsWrittenAsKeyAndValue_LikeMessagePack()
    {
        List<Shape?> shapes = [new Circle { Radius = 1.5 }, null, new Square { Side = 2 }];

        byte[] mux = MessagePackSerializer.Serialize(shapes, s_mux);

        Assert.Equal(Convert.ToHexString(MessagePackSerializer.Serialize(shapes, s_reference)), Convert.ToHexString(mux));
        List<Shape?> back = MessagePackSerializer.Deserialize<List<Shape?>>(mux, s_mux);
        Assert.Equal(1.5, Assert.IsType<Circle>(back[0]).Radius);
        Assert.Null(back[1]);
        Assert.Equal(2, Assert.IsType<Square>(back[2]).Side);
    }

    [Fact]
    public void KeyedMembers_GoAtTheirIndex_WithNilInTheGaps()
    {
        byte[] bytes = MessagePackSerializer.Serialize(new Versioned { Id = 7, Name = "x", Ratio = 0.75 }, s_mux);

        // [ 7, nil, "x", 0.75 ]
        Assert.Equal("9407C0A178CB3FE8000000000000", Convert.ToHexString(bytes));
    }

    [Fact]
    public void ExtraElements_AreSkipped_AndMissingOnesKeepTheirDefaults()
    {
        // [ 7, nil, "x", 0.75, "added later", [1, 2] ]: a newer peer's contract.
        Versioned newer = MessagePackSerializer.Deserialize<Versioned>(Convert.FromHexString("9607C0A178CB3FE8000000000000AB6164646564206C61746572920102"), s_mux);
        Assert.Equal((7, "x", 0.75, "local"), (newer.Id, newer.Name, newer.Ratio, newer.NotSerialized));

        Versioned onlyId = MessagePackSerializer.Deserialize<Versioned>(Convert.FromHexString("9107"), s_mux);
        Assert.Equal((7, "unnamed", 0.5), (onlyId.Id, onlyId.Name, onlyId.Ratio));
    }

    [Fact]
    public void GeneratedFormatters_AreTheOnesMuxUses_NotMessagePacksRunTimeOnes()
    {
        // Run-time generated formatters live in MessagePack's dynamic assembly; ours in this one.
        Assert.Same(typeof(GeneratedFormatterTests).Assembly, Formatter<Order>().GetType().Assembly);
        Assert.Same(typeof(GeneratedFormatterTests).Assembly, Formatter<Shape>().GetType().Assembly);
        Assert.Same(typeof(GeneratedFormatterTests).Assembly, Formatter<Profile>().GetType().Assembly);

        // Collections and enums of the contracts are registered up front (no MakeGenericType at run time).
        Assert.IsType<GenericEnumFormatter<Priority>>(Formatter<Priority>());
        Assert.IsType<ListFormatter<Dictionary<string, int[]>>>(Formatter<List<Dictionary<string, int[]>>>());
        Assert.IsType<DictionaryFormatter<string, int[]>>(Formatter<Dictionary<string, int[]>>());
        Assert.IsType<NullableFormatter<Priority>>(Formatter<Priority?>());
    }

    [Fact]
    public void MemberFormatters_ComeFromTheResolverOfEachCall()
    {
        // A generated formatter keeps the member formatters it was last given; options with another
        // resolver (another connection's) must get that resolver's formatters, every time.
        MessagePackSerializerOptions shouting = MuxSerializerOptions.ForClient(MessagePackSerializerOptions.Standard.WithResolver(
            MessagePack.Resolvers.CompositeResolver.Create([new UpperCaseStringFormatter()], [MessagePack.Resolvers.StandardResolver.Instance])));
        var item = new LineItem("ab", 3, 1.5m);

        for (int i = 0; i < 3; i++)
        {
            Assert.Equal("ab", MessagePackSerializer.Deserialize<LineItem>(MessagePackSerializer.Serialize(item, s_mux), s_reference).Sku);
            Assert.Equal("AB", MessagePackSerializer.Deserialize<LineItem>(MessagePackSerializer.Serialize(item, shouting), s_reference).Sku);
            Assert.Equal("AB", MessagePackSerializer.Deserialize<LineItem>(MessagePackSerializer.Serialize(item, s_reference), shouting).Sku);
            Assert.Equal("ab", MessagePackSerializer.Deserialize<LineItem>(MessagePackSerializer.Serialize(item, s_reference), s_mux).Sku);
        }
    }

    private sealed class UpperCaseStringFormatter : IMessagePackFormatter<string?>
    {
        public void Serialize(ref MessagePackWriter writer, string? value, MessagePackSerializerOptions options) => writer.Write(value?.ToUpperInvariant());

        public string? Deserialize(ref MessagePackReader reader, MessagePackSerializerOptions options) => reader.ReadString()?.ToUpperInvariant();
    }

    private static IMessagePackFormatter<T> Formatter<T>() => s_mux.Resolver.GetFormatterWithVerify<T>();

    private static byte[] SerializeWith(MessagePackSerializerOptions options, object value) =>
        MessagePackSerializer.Serialize(value.GetType(), value, options);

    internal static Order SampleOrder() => new()
    {
        Id = Guid.Parse("6f9619ff-8b86-d011-b42d-00c04fc964ff"),
        Customer = "Grace",
        Items = [new LineItem("a", 1, 2m), new LineItem("b", 2, 0.25m)],
        Tags = new() { ["x"] = [1, 2], ["y"] = [] },
        Priority = Priority.High,
        Discount = 5,
        Created = new DateTime(2024, 5, 6, 7, 8, 9, DateTimeKind.Utc),
        Featured = new LineItem("f", 9, 99.99m),
    };

    internal static Everything SampleEverything() => new()
    {
        Id = Guid.Parse("0f8fad5b-d9cb-469f-a165-70867728950e"),
        At = new DateTimeOffset(2024, 1, 2, 3, 4, 5, 678, TimeSpan.FromHours(5.5)),
        Local = new DateTime(2024, 1, 2, 3, 4, 5, DateTimeKind.Local),
        Utc = new DateTime(2024, 1, 2, 3, 4, 5, DateTimeKind.Utc),
        Unspecified = new DateTime(2024, 1, 2, 3, 4, 5, DateTimeKind.Unspecified),
        Amount = 79228162514264337593543950335m,
        Bytes = [1, 2, 3],
        Memory = new byte[] { 4, 5 },
        Nested = [new() { ["a"] = [1, 2] }, new()],
        MaybeInt = null,
        MaybeText = null,
        Shape = new Square { Side = 3 },
        MaybePriority = Priority.Low,
    };
}
