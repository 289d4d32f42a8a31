using System.Net;
using MessagePack;
using MessagePack.Formatters;
using MessagePack.Resolvers;
using Mux.Tests.Generated;
using Mux.Tests.Infrastructure;

namespace Mux.Tests.Serialization;

/// <summary>Users' own MessagePack-CSharp types and options through a real connection.</summary>
public sealed class MessagePackIntegrationTests
{
    private static readonly MessagePackSerializerOptions s_lz4 =
        MessagePackSerializerOptions.Standard.WithCompression(MessagePackCompression.Lz4BlockArray);

    [Fact]
    public async Task EveryValueShape_RoundTrips_OverTcp()
    {
        await using var host = await GeneratedHost.StartAsync();
        Everything sent = GeneratedFormatterTests.SampleEverything();

        Everything back = (await host.Proxy.Echo(sent))!;

        Assert.Equal(sent.Id, back.Id);
        Assert.Equal(sent.At, back.At);
        Assert.Equal(sent.At.Offset, back.At.Offset); // the offset survives, not only the instant
        Assert.Equal(sent.Amount, back.Amount);
        Assert.Equal(sent.Bytes, back.Bytes);
        Assert.Equal(sent.Memory.ToArray(), back.Memory.ToArray());
        Assert.Equal(2, back.Nested!.Count);
        Assert.Equal([1, 2], back.Nested[0]["a"]);
        Assert.Empty(back.Nested[1]);
        Assert.Equal(3, Assert.IsType<Square>(back.Shape).Side);
        Assert.Equal(Priority.Low, back.MaybePriority);

        // DateTime is a MessagePack timestamp: an instant, read back as UTC whatever Kind was sent
        // (MessagePack-CSharp's own rule, which any peer using it follows).
        Assert.Equal(sent.Local.ToUniversalTime(), back.Local);
        Assert.Equal(sent.Utc, back.Utc);
        Assert.Equal(DateTimeKind.Utc, back.Utc.Kind);
        Assert.Equal(DateTime.SpecifyKind(sent.Unspecified, DateTimeKind.Utc), back.Unspecified);
    }

    [Fact]
    public async Task NullAndEmpty_RoundTrip_ForEveryNullableShape()
    {
        await using var host = await GeneratedHost.StartAsync();

        Assert.Null(await host.Proxy.Echo(null));
        Everything empty = (await host.Proxy.Echo(new Everything()))!;
        Assert.Null(empty.Bytes);
        Assert.Null(empty.Nested);
        Assert.Null(empty.MaybeInt);
        Assert.Null(empty.MaybeText);
        Assert.Null(empty.Shape);
        Assert.Null(empty.MaybePriority);
        Assert.Null(await host.Proxy.EchoBytes(null, ReadOnlyMemory<byte>.Empty));
        Assert.Equal([null], await host.Proxy.EchoShapes([null]));
    }

    [Fact]
    public async Task StringKeys_SerializationConstructor_Union_AndBytes_RoundTrip()
    {
        await using var host = await GeneratedHost.StartAsync();

        Profile profile = await host.Proxy.EchoProfile(new Profile { Name = "Ada", Age = 36, Emails = ["a@b.c"] }, new Setting { Key = "k", Value = "v" });
        Assert.Equal(("Ada/k=v", 36, "a@b.c"), (profile.Name, profile.Age, Assert.Single(profile.Emails!)));

        Money money = await host.Proxy.EchoMoney(new Money(1.25m, "USD"));
        Assert.Equal((2.5m, "USD"), (money.Amount, money.Currency));

        List<Shape?> shapes = await host.Proxy.EchoShapes([new Circle { Radius = 1 }, new Square { Side = 2 }]);
        Assert.Equal(1, Assert.IsType<Circle>(shapes[0]).Radius);
        Assert.Equal(2, Assert.IsType<Square>(shapes[1]).Side);

        Assert.Equal([1, 2, 3, 4], await host.Proxy.EchoBytes([1, 2], new byte[] { 3, 4 }));
    }

    [Fact]
    public async Task Lz4Compression_WorksEndToEnd_WhenBothSidesUseIt()
    {
        await using var host = await GeneratedHost.StartAsync(
            new MuxServerOptions { SerializerOptions = s_lz4 },
            new MuxClientOptions { SerializerOptions = s_lz4 });
        Order order = GeneratedFormatterTests.SampleOrder();
        order.Items = Enumerable.Range(0, 500).Select(i => new LineItem("sku-" + i, i, i / 4m)).ToList();

        List<LineItem> sent = [.. order.Items];

        Order back = await host.Proxy.Roundtrip(order);

        Assert.Equal([.. sent, new LineItem("server", 1, 0.01m)], back.Items);
        Assert.Equal("Grace (seen)", back.Customer);
    }

    [Fact]
    public async Task UsersOwnResolver_IsUsed_OnBothSides()
    {
        var clientFormatter = new CelsiusFormatter();
        var serverFormatter = new CelsiusFormatter();
        await using var host = await ThermometerHost.StartAsync(clientFormatter, serverFormatter);

        Celsius warmer = await host.Proxy.Warm(new Celsius(20.5), 1.5);

        Assert.Equal(22, warmer.Degrees);
        Assert.Equal((1, 1), (clientFormatter.Writes, clientFormatter.Reads));
        Assert.Equal((1, 1), (serverFormatter.Writes, serverFormatter.Reads));
    }

    [Fact]
    public async Task UntrustedData_RejectsAHostileNesting_WithInvalidArguments_AndTheConnectionStaysUp()
    {
        await using var host = await GeneratedHost.StartAsync();
        var root = new Node();
        Node tip = root;
        for (int i = 0; i < 2000; i++)
        {
            tip = tip.Child = new Node();
        }

        // The client trusts what it writes; the server reads with UntrustedData (depth limit 500).
        MuxRemoteException ex = await Assert.ThrowsAsync<MuxRemoteException>(() => host.Proxy.Depth(root));

        Assert.Equal(MuxStatusCode.InvalidArguments, ex.StatusCode);
        Assert.Contains("Depth", ex.Message, StringComparison.Ordinal);
        Assert.Equal(3, await host.Proxy.Depth(new Node { Child = new Node { Child = new Node() } }));
        Assert.Equal(1, host.Server.ActiveConnections);
    }

    [Fact]
    public void BothSidesOptions_UpgradeTrustedDataToUntrustedData_AndKeepAnyOtherSecurity()
    {
        // A client reads what its server sends as a server reads its clients: either may be hostile.
        foreach (Func<MessagePackSerializerOptions, MessagePackSerializerOptions> side in new Func<MessagePackSerializerOptions, MessagePackSerializerOptions>[] { Mux.Serialization.MuxSerializerOptions.ForServer, Mux.Serialization.MuxSerializerOptions.ForClient })
        {
            Assert.Same(MessagePackSecurity.UntrustedData, side(MessagePackSerializerOptions.Standard).Security);
            Assert.Same(MessagePackSecurity.UntrustedData, side(s_lz4).Security);
            MessagePackSecurity custom = MessagePackSecurity.UntrustedData.WithMaximumObjectGraphDepth(20);
            Assert.Same(custom, side(MessagePackSerializerOptions.Standard.WithSecurity(custom)).Security);
        }
    }

    /// <summary>A server with the generated test service and one TCP client.</summary>
    private sealed class GeneratedHost : IAsyncDisposable
    {
        private GeneratedHost(MuxServer server, MuxClient client)
        {
            Server = server;
            Client = client;
            Proxy = client.CreateProxy<IGeneratedService>();
        }

        public MuxServer Server { get; }

        public MuxClient Client { get; }

        public IGeneratedService Proxy { get; }

        public static async Task<GeneratedHost> StartAsync(MuxServerOptions? serverOptions = null, MuxClientOptions? clientOptions = null)
        {
            serverOptions ??= new MuxServerOptions();
            serverOptions.EndPoint = new IPEndPoint(IPAddress.Loopback, 0);
            var server = new MuxServer(serverOptions);
            server.AddService<IGeneratedService>(new GeneratedService());
            await server.StartAsync();
            MuxClient client = await MuxClient.ConnectAsync(server.LocalEndPoint!, clientOptions);
            return new GeneratedHost(server, client);
        }

        public async ValueTask DisposeAsync()
        {
            await Client.DisposeAsync().AsTask().WaitAsync(TestHost.Patience);
            await Server.StopAsync(new CancellationTokenSource(TestHost.Patience).Token).WaitAsync(TestHost.Patience);
        }
    }

    private sealed class ThermometerHost : IAsyncDisposable
    {
        private readonly MuxServer _server;
        private readonly MuxClient _client;

        private ThermometerHost(MuxServer server, MuxClient client)
        {
            _server = server;
            _client = client;
            Proxy = client.CreateProxy<IThermometer>();
        }

        public IThermometer Proxy { get; }

        public static async Task<ThermometerHost> StartAsync(CelsiusFormatter clientFormatter, CelsiusFormatter serverFormatter)
        {
            var server = new MuxServer(new MuxServerOptions
            {
                EndPoint = new IPEndPoint(IPAddress.Loopback, 0),
                SerializerOptions = MessagePackSerializerOptions.Standard.WithResolver(
                    CompositeResolver.Create([serverFormatter], [StandardResolver.Instance])),
            });
            server.AddService<IThermometer>(new Thermometer());
            await server.StartAsync();
            MuxClient client = await MuxClient.ConnectAsync(server.LocalEndPoint!, new MuxClientOptions
            {
                SerializerOptions = MessagePackSerializerOptions.Standard.WithResolver(
                    CompositeResolver.Create([clientFormatter], [StandardResolver.Instance])),
            });
            return new ThermometerHost(server, client);
        }

        public async ValueTask DisposeAsync()
        {
            await _client.DisposeAsync().AsTask().WaitAsync(TestHost.Patience);
            await _server.StopAsync(new CancellationTokenSource(TestHost.Patience).Token).WaitAsync(TestHost.Patience);
        }
    }

    private sealed class Thermometer : IThermometer
    {
        public Task<Celsius> Warm(Celsius temperature, double by) => Task.FromResult(new Celsius(temperature.Degrees + by));
    }
}

/// <summary>A type MessagePack cannot serialize by itself: only the user's resolver knows it.</summary>
public sealed record Celsius(double Degrees);

// MUX010 says Celsius has no formatter; the users' own resolver supplies one, so it is suppressed.
#pragma warning disable MUX010
[MuxService]
public interface IThermometer
{
    Task<Celsius> Warm(Celsius temperature, double by);
}
#pragma warning restore MUX010

/// <summary>Writes <see cref="Celsius"/> as "20.5C" and counts its uses.</summary>
public sealed class CelsiusFormatter : IMessagePackFormatter<Celsius?>
{
    private int _writes;
    private int _reads;

    public int Writes => Volatile.Read(ref _writes);

    public int Reads => Volatile.Read(ref _reads);

    public void Serialize(ref MessagePackWriter writer, Celsius? value, MessagePackSerializerOptions options)
    {
        Interlocked.Increment(ref _writes);
        writer.Write(value is null ? null : value.Degrees.ToString(System.Globalization.CultureInfo.InvariantCulture) + "C");
    }

    public Celsius? Deserialize(ref MessagePackReader reader, MessagePackSerializerOptions options)
    {
        Interlocked.Increment(ref _reads);
        string? text = reader.ReadString();
        return text is null ? null : new Celsius(double.Parse(text.AsSpan(0, text.Length - 1), System.Globalization.CultureInfo.InvariantCulture));
    }
}
