namespace Mux.Tests.Generated;

// Contracts whose proxies, dispatchers and formatters the Mux generator writes at build time.
// Between them they cover every shape the generator supports.

public enum Priority : long
{
    Low = 1,
    High = long.MaxValue,
}

/// <summary>A positional record: read back through its primary constructor.</summary>
[MuxObject]
public sealed record LineItem(string Sku, int Quantity, decimal Price);

/// <summary>A class with a parameterless constructor and settable members, in declaration order.</summary>
[MuxObject]
public sealed class Order
{
    public Guid Id { get; set; }

    public string Customer { get; set; } = string.Empty;

    public List<LineItem> Items { get; set; } = [];

    public Dictionary<string, int[]> Tags { get; set; } = [];

    public Priority Priority { get; set; }

    public int? Discount { get; set; }

    public DateTime Created { get; set; }

    public LineItem? Featured { get; init; }
}

/// <summary>Explicit keys with a gap, init-only members and a default kept when the array is short.</summary>
[MuxObject]
public sealed class Versioned
{
    [MuxKey(0)]
    public int Id { get; init; }

    [MuxKey(2)]
    public string Name { get; init; } = "unnamed";

    [MuxKey(3)]
    public double Ratio { get; set; } = 0.5;

    public string NotSerialized { get; set; } = "local";
}

/// <summary>A struct with a constructor that takes its members.</summary>
[MuxObject]
public readonly struct Point(int x, int y)
{
    public int X { get; } = x;

    public int Y { get; } = y;
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
