using MessagePack;
using Mux;

namespace Mux.Fuzz;

/// <summary>The service the server target dispatches to: scalars, a keyed object, collections,
/// a union and a method without a result, so fuzzed Requests reach every kind of generated formatter.</summary>
[MuxService]
public interface IFuzzService
{
    Task<int> Add(int a, int b);

    Task<FuzzOrder?> Echo(FuzzOrder? order);

    Task<int> Count(Dictionary<string, List<int>> groups, string?[] names);

    Task<FuzzShape?> Shape(FuzzShape? shape);

    Task Nothing();
}

[MessagePackObject]
public sealed class FuzzOrder
{
    [Key(0)]
    public Guid Id { get; set; }

    [Key(1)]
    public DateTimeOffset Placed { get; set; }

    [Key(2)]
    public List<string> Lines { get; set; } = [];

    [Key(3)]
    public decimal Total { get; set; }
}

[Union(0, typeof(FuzzCircle))]
[Union(1, typeof(FuzzSquare))]
public abstract class FuzzShape
{
}

[MessagePackObject]
public sealed class FuzzCircle : FuzzShape
{
    [Key(0)]
    public double Radius { get; set; }
}

[MessagePackObject]
public sealed class FuzzSquare : FuzzShape
{
    [Key(0)]
    public double Side { get; set; }
}

internal sealed class FuzzService : IFuzzService
{
    public Task<int> Add(int a, int b) => Task.FromResult(unchecked(a + b));

    public Task<FuzzOrder?> Echo(FuzzOrder? order) => Task.FromResult(order);

    public Task<int> Count(Dictionary<string, List<int>> groups, string?[] names) => Task.FromResult(groups.Count + names.Length);

    public Task<FuzzShape?> Shape(FuzzShape? shape) => Task.FromResult(shape);

    public Task Nothing() => Task.CompletedTask;
}
