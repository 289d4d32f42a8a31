using System.Net;
using Mux;
using Mux.Samples.Orders;

// Places an order through a real loopback connection and checks what comes back. Every formatter
// involved was generated at compile time, so this runs the same under Native AOT:
//   dotnet publish samples/Mux.Samples.Orders -c Release -r linux-x64 -p:PublishAot=true
//   samples/Mux.Samples.Orders/bin/Release/net10.0/linux-x64/publish/Mux.Samples.Orders

await using var server = new MuxServer(new MuxServerOptions { EndPoint = new IPEndPoint(IPAddress.Loopback, 0) });
server.AddService<IOrderService>(new OrderService());
await server.StartAsync();

await using var client = await MuxClient.ConnectAsync(server.LocalEndPoint!);
IOrderService orders = client.CreateProxy<IOrderService>();

var order = new Order
{
    Id = Guid.Parse("6f9619ff-8b86-d011-b42d-00c04fc964ff"),
    Placed = new DateTimeOffset(2026, 11, 23, 9, 30, 0, TimeSpan.FromHours(-5)),
    Customer = "Ada",
    Lines = [new OrderLine("pen", 3, 1.25m), new OrderLine("ink", 1, 7.5m)],
};

Receipt receipt = await orders.Place(order);
List<Order> recent = await orders.Recent(5);

bool ok = receipt.OrderId == order.Id
    && receipt.Total == 11.25m
    && receipt.Order.Placed == order.Placed && receipt.Order.Placed.Offset == order.Placed.Offset
    && receipt.Order.Lines.SequenceEqual(order.Lines)
    && recent.Count == 1 && recent[0].Customer == "Ada";

Console.WriteLine($"order {receipt.OrderId} for {receipt.Order.Customer}: {receipt.Order.Lines.Count} lines, total {receipt.Total}, placed {receipt.Order.Placed:O}");
Console.WriteLine(ok ? "OK" : "MISMATCH");
return ok ? 0 : 1;

/// <summary>Keeps the orders it was given, newest first.</summary>
internal sealed class OrderService : IOrderService
{
    private readonly List<Order> _orders = [];
    private readonly Lock _lock = new();

    public Task<Receipt> Place(Order order)
    {
        lock (_lock)
        {
            _orders.Insert(0, order);
        }

        return Task.FromResult(new Receipt(order.Id, DateTimeOffset.UtcNow, order.Total, order));
    }

    public Task<List<Order>> Recent(int count)
    {
        lock (_lock)
        {
            return Task.FromResult(_orders.Take(count).ToList());
        }
    }
}
