using MessagePack;

namespace Mux.Tests.Generated;

// Contracts whose proxies, dispatchers and formatters the Mux generator writes at build time,
// annotated the way MessagePack-CSharp users annotate types. Between them they cover every shape
// the generator supports.

public enum Priority : long
{
    Low = 1,
    High = long.MaxValue,
}

/// <summary>A positional record: read back through its primary constructor.</summary>
[MessagePackObject]
public sealed record LineItem([property: Key(0)] string Sku, [property: Key(1)] int Quantity, [property: Key(2)] decimal Price);

/// <summary>A class with a parameterless constructor and settable members.</summary>
[MessagePackObject]
public sealed class Order
{
    [Key(0)]
    public Guid Id { get; set; }

    [Key(1)]
    public string Customer { get; set; } = string.Empty;

    [Key(2)]
    public List<LineItem> Items { get; set; } = [];

    [Key(3)]
    public Dictionary<string, int[]> Tags { get; set; } = [];

    [Key(4)]
    public Priority Priority { get; set; }

    [Key(5)]
    public int? Discount { get; set; }

    [Key(6)]
    public DateTime Created { get; set; }

    [Key(7)]
    public LineItem? Featured { get; init; }
}

/// <summary>Keys with a gap, init-only members, a default kept when the array is short, and an ignored member.</summary>
[MessagePackObject]
public sealed class Versioned
{
    [Key(0)]
    public int Id { get; init; }

    [Key(2)]
    public string Name { get; init; } = "unnamed";

    [Key(3)]
    public double Ratio { get; set; } = 0.5;

    [IgnoreMember]
    public string NotSerialized { get; set; } = "local";
}

/// <summary>A struct with a constructor that takes its members.</summary>
[MessagePackObject]
public readonly struct Point(int x, int y)
{
    [Key(0)]
    public int X { get; } = x;

    [Key(1)]
    public int Y { get; } = y;
}

/// <summary>String keys: a MessagePack map.</summary>
[MessagePackObject]
public sealed class Profile
{
    [Key("name")]
    public string Name { get; set; } = string.Empty;

    [Key("age")]
    public int Age { get; set; }

    [Key("emails")]
    public List<string>? Emails { get; set; }

    [IgnoreMember]
    public string Cache { get; set; } = "local";
}

/// <summary>keyAsPropertyName: every public member is keyed by its name.</summary>
[MessagePackObject(keyAsPropertyName: true)]
public sealed class Setting
{
    public string Key { get; set; } = string.Empty;

    public string? Value { get; set; }
}

/// <summary>Immutable, read back through the constructor marked [SerializationConstructor].</summary>
[MessagePackObject]
public sealed class Money
{
    public Money(decimal amount)
        : this(amount, "EUR")
    {
    }

    [SerializationConstructor]
    public Money(decimal amount, string currency)
    {
        Amount = amount;
        Currency = currency;
    }

    [Key(0)]
    public decimal Amount { get; }

    [Key(1)]
    public string Currency { get; }
}

/// <summary>A [Union] hierarchy: written as [case key, value].</summary>
[Union(0, typeof(Circle))]
[Union(1, typeof(Square))]
public abstract class Shape
{
}

[MessagePackObject]
public sealed class Circle : Shape
{
    [Key(0)]
    public double Radius { get; set; }
}

[MessagePackObject]
public sealed class Square : Shape
{
    [Key(0)]
    public double Side { get; set; }
}

/// <summary>A recursive type: lets a hostile peer nest as deep as it likes.</summary>
[MessagePackObject]
public sealed class Node
{
    [Key(0)]
    public Node? Child { get; set; }
}

/// <summary>Every value shape a contract commonly carries, in one object.</summary>
[MessagePackObject]
public sealed class Everything
{
    [Key(0)]
    public Guid Id { get; set; }

    [Key(1)]
    public DateTimeOffset At { get; set; }

    [Key(2)]
    public DateTime Local { get; set; }

    [Key(3)]
    public DateTime Utc { get; set; }

    [Key(4)]
    public DateTime Unspecified { get; set; }

    [Key(5)]
    public decimal Amount { get; set; }

    [Key(6)]
    public byte[]? Bytes { get; set; }

    [Key(7)]
    public ReadOnlyMemory<byte> Memory { get; set; }

    [Key(8)]
    public List<Dictionary<string, List<int>>>? Nested { get; set; }

    [Key(9)]
    public int? MaybeInt { get; set; }

    [Key(10)]
    public string? MaybeText { get; set; }

    [Key(11)]
    public Shape? Shape { get; set; }

    [Key(12)]
    public Priority? MaybePriority { get; set; }
}

[MuxService]
public interface IGreeter
{
    Task<string> Hello(string name);
}

[MuxService]
public interface IGeneratedService : IGreeter
{
    /// <summary>Task, no parameters, no result.</summary>
    Task Touch();

    /// <summary>Task&lt;T&gt;, no parameters.</summary>
    Task<int> TouchCount();

    /// <summary>ValueTask, no result.</summary>
    ValueTask Reset(int value);

    /// <summary>ValueTask&lt;T&gt;.</summary>
    ValueTask<long> Multiply(int a, long b);

    /// <summary>Six parameters of six types.</summary>
    Task<string> Describe(string text, int number, double real, bool flag, Guid id, DateTime when);

    Task<Order> Roundtrip(Order order);

    Task<Order?> Find(Guid id);

    ValueTask<Point> Move(Point point, int dx, int dy);

    Task<Versioned> Rename(Versioned value, string name);

    Task<List<Dictionary<string, int[]>>?> Nested(List<Dictionary<string, int[]>>? input, Priority[] priorities, Priority? maybe);

    Task<int> Sum(int a, int b);

    Task<int> Sum(int a, int b, int c);

    Task<string> Sum(string a, string b);

    /// <summary>Waits until the token fires; the service records that it did.</summary>
    Task WaitForCancellation(int id, CancellationToken cancellationToken);

    /// <summary>Throws ArgumentException with the message.</summary>
    ValueTask<int> Fail(string message);

    Task<Everything?> Echo(Everything? value);

    Task<Profile> EchoProfile(Profile profile, Setting setting);

    Task<Money> EchoMoney(Money money);

    Task<List<Shape?>> EchoShapes(List<Shape?> shapes);

    Task<byte[]?> EchoBytes(byte[]? bytes, ReadOnlyMemory<byte> memory);

    /// <summary>How deep the chain of nodes goes.</summary>
    Task<int> Depth(Node? node);
}

internal static class Nesting
{
    /// <summary>Internal and nested: the proxy and dispatcher still compile.</summary>
    [MuxService]
    internal interface IInternalService
    {
        Task<int> Twice(int value);
    }
}
