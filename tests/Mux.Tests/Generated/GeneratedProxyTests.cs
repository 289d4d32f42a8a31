using System.Net;
using Mux.Tests.Infrastructure;

namespace Mux.Tests.Generated;

/// <summary>End to end through generated proxies, dispatchers and formatters, over in-memory pipes and TCP.</summary>
public sealed class GeneratedProxyTests
{
    private sealed class Host : IAsyncDisposable
    {
        private Host(MuxServer server, MuxClient client, GeneratedService service)
        {
            Server = server;
            Client = client;
            Service = service;
            Proxy = client.CreateProxy<IGeneratedService>();
        }

        public MuxServer Server { get; }

        public MuxClient Client { get; }

        public GeneratedService Service { get; }

        public IGeneratedService Proxy { get; }

        public static async Task<Host> StartAsync(TransportKind kind, bool detailedErrors = false)
        {
            var service = new GeneratedService();
            var server = new MuxServer(new MuxServerOptions { EndPoint = new IPEndPoint(IPAddress.Loopback, 0), EnableDetailedErrors = detailedErrors });
            server.AddService<IGeneratedService>(service);
            server.AddService<Nesting.IInternalService>(service);
            MuxClient client;
            if (kind == TransportKind.Tcp)
            {
                await server.StartAsync();
                client = await MuxClient.ConnectAsync(server.LocalEndPoint!);
            }
            else
            {
                client = await server.ConnectInMemoryAsync();
            }

            return new Host(server, client, service);
        }

        public async ValueTask DisposeAsync()
        {
            await Client.DisposeAsync().AsTask().WaitAsync(TestHost.Patience);
            using var deadline = new CancellationTokenSource(TestHost.Patience);
            await Server.StopAsync(deadline.Token).WaitAsync(TestHost.Patience + TestHost.Patience);
        }
    }

    [Theory]
    [InlineData(TransportKind.InMemory)]
    [InlineData(TransportKind.Tcp)]
    public async Task TaskAndValueTaskMethods_WithAndWithoutResults(TransportKind kind)
    {
        await using Host host = await Host.StartAsync(kind);

        await host.Proxy.Touch();
        await host.Proxy.Touch();
        Assert.Equal(2, await host.Proxy.TouchCount());

        await host.Proxy.Reset(41);
        Assert.Equal(41, host.Service.LastReset);

        Assert.Equal(3L * 5_000_000_000L, await host.Proxy.Multiply(3, 5_000_000_000L));
    }

    [Theory]
    [InlineData(TransportKind.InMemory)]
    [InlineData(TransportKind.Tcp)]
    public async Task SixParameters_ArriveInOrder(TransportKind kind)
    {
        await using Host host = await Host.StartAsync(kind);
        var id = Guid.Parse("0f8fad5b-d9cb-469f-a165-70867728950e");
        var when = new DateTime(2024, 2, 29, 13, 14, 15, 678, DateTimeKind.Utc);

        string described = await host.Proxy.Describe("héllo", -42, 2.5, true, id, when);

        Assert.Equal("héllo|-42|2.5|True|0f8fad5b-d9cb-469f-a165-70867728950e|2024-02-29T13:14:15.6780000Z", described);
    }

    [Theory]
    [InlineData(TransportKind.InMemory)]
    [InlineData(TransportKind.Tcp)]
    public async Task ComplexObjectGraph_RoundTrips(TransportKind kind)
    {
        await using Host host = await Host.StartAsync(kind);
        var order = new Order
        {
            Id = Guid.Parse("6f9619ff-8b86-d011-b42d-00cf4fc964ff"),
            Customer = "Ada",
            Items = [new LineItem("apple", 3, 0.25m), new LineItem("pear", 1, 1234567.891m)],
            Tags = new Dictionary<string, int[]> { ["a"] = [1, 2, 3], ["empty"] = [] },
            Priority = Priority.High,
            Discount = 15,
            Created = new DateTime(2025, 1, 2, 3, 4, 5, DateTimeKind.Utc),
            Featured = new LineItem("star", 9, -1m),
        };

        Order back = await host.Proxy.Roundtrip(order);

        Assert.Equal(order.Id, back.Id);
        Assert.Equal("Ada (seen)", back.Customer);
        Assert.Equal([new LineItem("apple", 3, 0.25m), new LineItem("pear", 1, 1234567.891m), new LineItem("server", 1, 0.01m)], back.Items);
        Assert.Equal(["a", "empty"], back.Tags.Keys.Order());
        Assert.Equal([1, 2, 3], back.Tags["a"]);
        Assert.Empty(back.Tags["empty"]);
        Assert.Equal(Priority.High, back.Priority);
        Assert.Equal(15, back.Discount);
        Assert.Equal(order.Created, back.Created);
        Assert.Equal(DateTimeKind.Utc, back.Created.Kind);
        Assert.Equal(new LineItem("star", 9, -1m), back.Featured);

        Order withNulls = await host.Proxy.Roundtrip(new Order { Id = order.Id, Discount = null, Featured = null });
        Assert.Null(withNulls.Discount);
        Assert.Null(withNulls.Featured);

        Assert.Null(await host.Proxy.Find(Guid.NewGuid()));
    }

    [Theory]
    [InlineData(TransportKind.InMemory)]
    [InlineData(TransportKind.Tcp)]
    public async Task StructsKeyedObjectsAndNestedCollections_RoundTrip(TransportKind kind)
    {
        await using Host host = await Host.StartAsync(kind);

        Point moved = await host.Proxy.Move(new Point(1, 2), 10, -20);
        Assert.Equal((11, -18), (moved.X, moved.Y));

        Versioned renamed = await host.Proxy.Rename(new Versioned { Id = 7, Name = "old", Ratio = 1.25, NotSerialized = "client" }, "new");
        Assert.Equal(7, renamed.Id);
        Assert.Equal("new", renamed.Name);
        Assert.Equal(2.5, renamed.Ratio);
        Assert.Equal("local", renamed.NotSerialized); // Not serialized: the client's default.

        List<Dictionary<string, int[]>>? nested = await host.Proxy.Nested([new Dictionary<string, int[]> { ["x"] = [7] }], [Priority.Low, Priority.High], Priority.Low);
        Assert.NotNull(nested);
        Assert.Equal(2, nested.Count);
        Assert.Equal([7], nested[0]["x"]);
        Assert.Equal([1, 2], nested[1]["priorities"]);
        Assert.Equal([1], nested[1]["maybe"]);

        Assert.Null(await host.Proxy.Nested(null, [], null));
    }

    [Theory]
    [InlineData(TransportKind.InMemory)]
    [InlineData(TransportKind.Tcp)]
    public async Task Overloads_CallTheirOwnMethod(TransportKind kind)
    {
        await using Host host = await Host.StartAsync(kind);

        Assert.Equal(3, await host.Proxy.Sum(1, 2));
        Assert.Equal(6, await host.Proxy.Sum(1, 2, 3));
        Assert.Equal("ab", await host.Proxy.Sum("a", "b"));
    }

    [Theory]
    [InlineData(TransportKind.InMemory)]
    [InlineData(TransportKind.Tcp)]
    public async Task DerivedInterfaceProxy_CallsBaseMethods_AndABaseProxyWorksToo(TransportKind kind)
    {
        await using Host host = await Host.StartAsync(kind);

        Assert.Equal("Hello, Ada!", await host.Proxy.Hello("Ada"));

        // The base method's id does not depend on which interface the proxy was made for.
        IGreeter greeter = host.Client.CreateProxy<IGreeter>();
        Assert.Equal("Hello, Bob!", await greeter.Hello("Bob"));

        Nesting.IInternalService nested = host.Client.CreateProxy<Nesting.IInternalService>();
        Assert.Equal(42, await nested.Twice(21));
    }

    [Theory]
    [InlineData(TransportKind.InMemory)]
    [InlineData(TransportKind.Tcp)]
    public async Task CancellationToken_ReachesTheHandler(TransportKind kind)
    {
        await using Host host = await Host.StartAsync(kind);
        using var cancellation = new CancellationTokenSource();

        Task call = host.Proxy.WaitForCancellation(17, cancellation.Token);
        Assert.Equal(17, await host.Service.WaitStarted.Task.WaitAsync(TestHost.Patience));
        Assert.False(call.IsCompleted);

        await cancellation.CancelAsync();

        await Assert.ThrowsAnyAsync<OperationCanceledException>(() => call).WaitAsync(TestHost.Patience);
        Assert.Equal(17, await host.Service.CancellationObserved.Task.WaitAsync(TestHost.Patience));
    }

    [Theory]
    [InlineData(TransportKind.InMemory)]
    [InlineData(TransportKind.Tcp)]
    public async Task ServerException_BecomesMuxRemoteException_WithItsMessageAndType_WhenDetailedErrorsAreOn(TransportKind kind)
    {
        await using Host host = await Host.StartAsync(kind, detailedErrors: true);

        MuxRemoteException error = await Assert.ThrowsAsync<MuxRemoteException>(async () => await host.Proxy.Fail("bad input: 42"));

        Assert.Equal(MuxStatusCode.HandlerFailed, error.StatusCode);
        Assert.Equal("bad input: 42", error.Message);
        Assert.Equal("System.ArgumentException", error.RemoteExceptionType);

        // The connection survives the failed call.
        Assert.Equal(5, await host.Proxy.Sum(2, 3));
    }

    [Fact]
    public void RegisteredDefinition_HasTheMethodIdsOfTheProtocol()
    {
        MuxServiceDefinition<IGeneratedService> definition = MuxServiceRegistry.GetDefinition<IGeneratedService>();
        const string Service = "Mux.Tests.Generated.IGeneratedService";

        Assert.Equal(Service, definition.ServiceName);
        var expected = new Dictionary<uint, string>
        {
            [MuxMethodId.Compute("Mux.Tests.Generated.IGreeter.Hello")] = "Hello",
            [MuxMethodId.Compute($"{Service}.Touch")] = "Touch",
            [MuxMethodId.Compute($"{Service}.TouchCount")] = "TouchCount",
            [MuxMethodId.Compute($"{Service}.Reset")] = "Reset",
            [MuxMethodId.Compute($"{Service}.Multiply")] = "Multiply",
            [MuxMethodId.Compute($"{Service}.Describe")] = "Describe",
            [MuxMethodId.Compute($"{Service}.Roundtrip")] = "Roundtrip",
            [MuxMethodId.Compute($"{Service}.Find")] = "Find",
            [MuxMethodId.Compute($"{Service}.Move")] = "Move",
            [MuxMethodId.Compute($"{Service}.Rename")] = "Rename",
            [MuxMethodId.Compute($"{Service}.Nested")] = "Nested",
            [MuxMethodId.Compute($"{Service}.Sum(System.Int32,System.Int32)")] = "Sum(System.Int32,System.Int32)",
            [MuxMethodId.Compute($"{Service}.Sum(System.Int32,System.Int32,System.Int32)")] = "Sum(System.Int32,System.Int32,System.Int32)",
            [MuxMethodId.Compute($"{Service}.Sum(System.String,System.String)")] = "Sum(System.String,System.String)",
            [MuxMethodId.Compute($"{Service}.WaitForCancellation")] = "WaitForCancellation",
            [MuxMethodId.Compute($"{Service}.Fail")] = "Fail",
            [MuxMethodId.Compute($"{Service}.Echo")] = "Echo",
            [MuxMethodId.Compute($"{Service}.EchoProfile")] = "EchoProfile",
            [MuxMethodId.Compute($"{Service}.EchoMoney")] = "EchoMoney",
            [MuxMethodId.Compute($"{Service}.EchoShapes")] = "EchoShapes",
            [MuxMethodId.Compute($"{Service}.EchoBytes")] = "EchoBytes",
            [MuxMethodId.Compute($"{Service}.Depth")] = "Depth",
        };

        Assert.Equal(expected.OrderBy(p => p.Key), definition.Methods.Select(p => KeyValuePair.Create(p.Key, p.Value.Name)).OrderBy(p => p.Key));
        Assert.Equal(
            MuxMethodId.Compute("Mux.Tests.Generated.Nesting.IInternalService.Twice"),
            Assert.Single(MuxServiceRegistry.GetDefinition<Nesting.IInternalService>().Methods).Key);
    }
}
