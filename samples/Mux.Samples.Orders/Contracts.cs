using MessagePack;
using Mux;

namespace Mux.Samples.Orders;

/// <summary>An order as a MessagePack-CSharp user annotates it: an array [Id, Placed, Customer, Lines].</summary>
[MessagePackObject]
public sealed class Order
{
    [Key(0)]
    public Guid Id { get; init; }

    [Key(1)]
    public DateTimeOffset Placed { get; init; }

    [Key(2)]
    public string Customer { get; init; } = "";

    [Key(3)]
    public List<OrderLine> Lines { get; init; } = [];

    /// <summary>Derived, so not sent.</summary>
    [IgnoreMember]
    public decimal Total => Lines.Sum(line => line.Price * line.Quantity);
}

/// <summary>A positional record, read back through its constructor.</summary>
[MessagePackObject]
public sealed record OrderLine([property: Key(0)] string Sku, [property: Key(1)] int Quantity, [property: Key(2)] decimal Price);

/// <summary>What the server answers: the order as it stored it.</summary>
[MessagePackObject]
public sealed record Receipt([property: Key(0)] Guid OrderId, [property: Key(1)] DateTimeOffset Accepted, [property: Key(2)] decimal Total, [property: Key(3)] Order Order);

[MuxService]
public interface IOrderService
{
    Task<Receipt> Place(Order order);

    Task<List<Order>> Recent(int count);
}
