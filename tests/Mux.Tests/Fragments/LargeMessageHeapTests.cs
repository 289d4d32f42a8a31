using System.Buffers;
using System.Net;
using MessagePack;
using MessagePack.Formatters;
using MessagePack.Resolvers;
using Mux.Protocol;
using Mux.Tests.Infrastructure;
using Mux.Tests.Protocol;
using Mux.Tests.Serialization;

namespace Mux.Tests.Fragments;

/// <summary>
/// A 16 MiB message over a real connection (loopback TCP, client and server in this process): it
/// arrives byte for byte, and Mux allocates or rents no array of 85,000 bytes or more for it on
/// either side, whatever bytes type carries it; the only large arrays are the ones the user's types
/// make, the argument the server deserializes and the result the client does (exactly those two,
/// which also shows the watch hears large allocations at all). The segments a message takes from
/// the shared segment pool all go back, after a call and when a connection is lost mid-message. In
/// the serial collection: the watch and the pool's counter are process-wide, so no other test may
/// run meanwhile.
/// </summary>
[Collection(SerialCollection.Name)]
public sealed class LargeMessageHeapTests
{
    private const int MiB = 1024 * 1024;
    private const int PayloadSize = 16 * MiB;

    public static TheoryData<string> BytesTypes => ["byte[]", "ReadOnlyMemory<byte>", "Memory<byte>", "ArraySegment<byte>", "ReadOnlySequence<byte>"];

    [Theory]
    [MemberData(nameof(BytesTypes))]
    public async Task A16MiBRequestAndResponse_RoundTripByteForByte_WithNoLargeArrayInMux_OnEitherSide(string type)
    {
        await using BytesHost host = await BytesHost.StartAsync();
        long outstanding = BufferSegmentPool.Shared.Outstanding;
        byte[] data = BlobService.Pattern(PayloadSize);
        Assert.Equal(data, BytesEcho.Bytes(await BytesEcho.EchoAsync(host.Proxy, type, data))); // Warm: code paths, caches, the segment pool.

        using var watch = new LargeArrayWatch();
        await watch.StartAsync();
        object echoed = await BytesEcho.EchoAsync(host.Proxy, type, data);
        await watch.StopAsync();

        Assert.True(data.AsSpan().SequenceEqual(BytesEcho.Bytes(echoed)), $"The {type} echoed differs from the one sent.");
        // The user's own: the server's argument and the client's result, each the payload's size
        // and an array header. Anything else is Mux's (or a copy it made).
        bool UsersOwn(LargeArrayWatch.LargeArray array) => array.Type == "System.Byte[]" && array.Size is >= PayloadSize and < PayloadSize + 64;
        Assert.True(watch.Allocated.Count(UsersOwn) == 2, $"Expected the user's two {PayloadSize:N0}-byte arrays on the large object heap, heard: {LargeArrayWatch.Describe(watch.Allocated)}.");
        Assert.True(!watch.Allocated.Any(array => !UsersOwn(array)), $"Arrays allocated on the large object heap besides the user's two: {LargeArrayWatch.Describe(watch.Allocated.Where(array => !UsersOwn(array)))}.");
        Assert.True(watch.Rented.Count == 0, $"Large arrays rented from ArrayPool.Shared: {LargeArrayWatch.Describe(watch.Rented)}.");
        await Hosts.WaitUntilAsync(() => BufferSegmentPool.Shared.Outstanding == outstanding, $"the segments to be returned ({BufferSegmentPool.Shared.Outstanding - outstanding} still out)");
    }

    [Fact]
    public async Task AStringWhoseFormatterAsksForMoreThanASegment_RoundTrips_InAnOversizedSegment_ThatGoesBack()
    {
        await using BytesHost host = await BytesHost.StartAsync();
        long outstanding = BufferSegmentPool.Shared.Outstanding;
        // MessagePack asks for a string's worst-case UTF-8 length (3 bytes a char) as one span.
        string text = string.Create(300_000, 0, static (chars, _) =>
        {
            for (int i = 0; i < chars.Length; i++)
            {
                chars[i] = (char)('a' + (i % 26) + (i % 1000 == 0 ? 0x100 : 0)); // Some two-byte chars.
            }
        });
        Assert.Equal(text, await host.Proxy.EchoText(text));

        using var watch = new LargeArrayWatch();
        await watch.StartAsync();
        string echoed = await host.Proxy.EchoText(text);
        await watch.StopAsync();

        Assert.Equal(text, echoed);
        // Both sides' writers rented one array of at least the worst case (900,005 bytes) for it.
        Assert.True(watch.Rented.Count(array => array.Size >= 900_005) == 2, $"Expected two oversized segments, one per side, rented: {LargeArrayWatch.Describe(watch.Rented)}.");
        await Hosts.WaitUntilAsync(() => BufferSegmentPool.Shared.Outstanding == outstanding, $"the segments to be returned ({BufferSegmentPool.Shared.Outstanding - outstanding} still out)");
    }

    [Theory]
    [InlineData(false)]
    [InlineData(true)]
    public async Task AClientConnectionLostWhileSendingA16MiBRequest_ReturnsItsSegments(bool compressed)
    {
        // Compressed, the bytes are encoded into pooled segments; else the caller's array is spliced in, between the
        // segment of the header and none after.
        long outstanding = BufferSegmentPool.Shared.Outstanding;
        var options = new MuxClientOptions { CallTimeout = TimeSpan.FromMinutes(1) };
        byte[] payload = BlobService.Pattern(PayloadSize);
        if (compressed)
        {
            options.SerializerOptions = MessagePackSerializerOptions.Standard.WithCompression(MessagePackCompression.Lz4BlockArray);
            new Random(16).NextBytes(payload); // Incompressible: 16 MiB of segments.
        }

        await using RawServer server = await RawServer.StartAsync(options);
        Task<byte[]> call = server.Proxy.Echo(payload);

        ReceivedFrame first = await server.Peer.ExpectFrameAsync();
        Assert.Equal(FrameType.Request, first.Type);
        long outNow = BufferSegmentPool.Shared.Outstanding - outstanding;
        Assert.True(compressed ? outNow > 100 : outNow <= 1, $"{outNow} segments out with the first fragment written.");
        server.Peer.Close();

        await Assert.ThrowsAsync<MuxConnectionException>(() => call.WaitAsync(TestHost.Patience));
        await Hosts.WaitUntilAsync(() => BufferSegmentPool.Shared.Outstanding == outstanding, $"the unsent fragments' segments to be returned ({BufferSegmentPool.Shared.Outstanding - outstanding} still out)");
    }

    [Fact]
    public async Task AClientConnectionLostWhileALargeRequestIsBeingSerialized_ReturnsItsSegments()
    {
        // The connection closes after the sender's closed check and before its message is queued:
        // no writer will ever take that message, so the sender must give its segments back.
        long outstanding = BufferSegmentPool.Shared.Outstanding;
        var formatter = new ClosingCelsiusFormatter();
        await using RawServer server = await RawServer.StartAsync(new MuxClientOptions
        {
            CallTimeout = TimeSpan.FromMinutes(1),
            SerializerOptions = MessagePackSerializerOptions.Standard.WithResolver(CompositeResolver.Create([formatter], [StandardResolver.Instance])),
        });
        formatter.WhileWriting = () =>
        {
            server.Peer.Close();
            Assert.True(SpinWait.SpinUntil(() => server.Client.State == MuxClientState.Closed, TestHost.Patience), "The client did not see its connection close.");
        };
        IThermometer proxy = server.Client.CreateProxy<IThermometer>();

        Task<Celsius> call = Task.Run(() => proxy.Warm(new Celsius(20), 1));

        await Assert.ThrowsAsync<MuxConnectionException>(() => call.WaitAsync(TestHost.Patience));
        Assert.Equal(1, formatter.Writes);
        await Hosts.WaitUntilAsync(() => BufferSegmentPool.Shared.Outstanding == outstanding, $"the segments of the message that was never queued to be returned ({BufferSegmentPool.Shared.Outstanding - outstanding} still out)");
    }

    [Theory]
    [InlineData(false)]
    [InlineData(true)]
    public async Task AServerConnectionLostWhileARequestArrivesInFragments_ReturnsItsSegments(bool bin)
    {
        await using BlobHost host = await BlobHost.StartAsync();
        long outstanding = BufferSegmentPool.Shared.Outstanding;
        await using RawMuxPeer peer = await RawMuxPeer.ConnectAsync(host.Server.LocalEndPoint!);
        await peer.HandshakeAsync();

        // A large bin lands in an array of its own (one segment holds what comes before it); the same bytes as a str stay
        // in pooled segments. Either way the call never runs: the connection is lost first.
        byte[] arguments = FragmentWire.BytesArgument(BlobService.Pattern(MiB));
        if (!bin)
        {
            arguments[1] = MessagePackCode.Str32;
        }

        byte[] message = FragmentWire.RequestMessage("Echo", arguments);
        const int Piece = 40_000;
        await peer.SendAsync(FragmentWire.First(FrameType.Request, 1, (uint)message.Length, message[..Piece]));
        for (int offset = Piece; offset < 4 * Piece; offset += Piece)
        {
            await peer.SendAsync(FragmentWire.Continuation(1, message[offset..(offset + Piece)], more: true));
        }

        // 160,000 bytes so far: three segments on the server, or one and the bin's own array.
        int segments = bin ? 1 : 3;
        await Hosts.WaitUntilAsync(
            () => BufferSegmentPool.Shared.Outstanding - outstanding == segments && host.Server.Connections.Sum(c => c.Inbound.ReassemblyBytesRented) > 0,
            $"the server to keep the fragments so far in {segments} segments ({BufferSegmentPool.Shared.Outstanding - outstanding} out)");
        peer.Close();

        await Hosts.WaitUntilAsync(() => host.Server.ActiveConnections == 1, "the server to drop the lost connection");
        await Hosts.WaitUntilAsync(() => BufferSegmentPool.Shared.Outstanding == outstanding, $"the segments of the message cut short to be returned ({BufferSegmentPool.Shared.Outstanding - outstanding} still out)");
        await Hosts.WaitUntilAsync(
            () => host.Server.Connections.Sum(c => c.Inbound.ReassemblyBytesRented + c.Inbound.LandingBytesReserved) == 0,
            "the server to give back the message's memory and its landing reservation");
    }

    /// <summary>A server with a <see cref="BytesService"/> on loopback TCP (port 0) and one client.</summary>
    private sealed class BytesHost : IAsyncDisposable
    {
        private BytesHost(MuxServer server, MuxClient client)
        {
            Server = server;
            Client = client;
            Proxy = client.CreateProxy<IBytesService>();
        }

        public MuxServer Server { get; }

        public MuxClient Client { get; }

        public IBytesService Proxy { get; }

        public static async Task<BytesHost> StartAsync()
        {
            var server = new MuxServer(new MuxServerOptions { EndPoint = new IPEndPoint(IPAddress.Loopback, 0) });
            server.AddService<IBytesService>(new BytesService());
            await server.StartAsync().WaitAsync(TestHost.Patience);
            MuxClient client = await MuxClient.ConnectAsync(server.LocalEndPoint!, new MuxClientOptions { CallTimeout = TimeSpan.FromMinutes(1) }).WaitAsync(TestHost.Patience);
            return new BytesHost(server, client);
        }

        public async ValueTask DisposeAsync()
        {
            await Client.DisposeAsync().AsTask().WaitAsync(TestHost.Patience);
            using var deadline = new CancellationTokenSource(TestHost.Patience);
            await Server.StopAsync(deadline.Token).WaitAsync(TestHost.Patience + TestHost.Patience);
        }
    }

    /// <summary>Writes a <see cref="Celsius"/> as 200 KB of bins (a Request in fragments), running
    /// <see cref="WhileWriting"/> once they are written, before the frame is queued.</summary>
    private sealed class ClosingCelsiusFormatter : IMessagePackFormatter<Celsius?>
    {
        private int _writes;

        public Action? WhileWriting { get; set; }

        public int Writes => Volatile.Read(ref _writes);

        public void Serialize(ref MessagePackWriter writer, Celsius? value, MessagePackSerializerOptions options)
        {
            Interlocked.Increment(ref _writes);
            byte[] piece = BlobService.Pattern(1000);
            writer.WriteArrayHeader(200);
            for (int i = 0; i < 200; i++)
            {
                writer.Write(piece);
            }

            WhileWriting?.Invoke();
        }

        public Celsius? Deserialize(ref MessagePackReader reader, MessagePackSerializerOptions options)
        {
            reader.Skip();
            return null;
        }
    }
}
