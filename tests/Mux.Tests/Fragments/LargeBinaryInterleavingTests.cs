using System.Buffers;
using System.IO.Pipelines;
using MessagePack;
using Mux.Client;
using Mux.Server;
using Mux.Tests.Infrastructure;

namespace Mux.Tests.Fragments;

/// <summary>
/// A 16 MiB binary each way on one in-memory connection, whose sending direction the test meters
/// (<see cref="ThrottledLink"/>): held 2 MiB into the transfer, a small call made then completes after only a few
/// hundred KiB more have gone through, so its frames went out and came in between the big message's fragments, in
/// both directions; then the big message arrives intact. Also: bytes of every size around a fragment, and a
/// connection cut mid-transfer, which fails the call and gives back the memory of both sides' messages.
/// </summary>
public sealed class LargeBinaryInterleavingTests
{
    private const int MiB = 1024 * 1024;
    private const int Fragment = 64 * 1024;

    [Fact]
    public async Task A16MiBUpload_CompletesIntact_WhileASmallCallCompletesBetweenItsFragments()
    {
        await using Metered host = await Metered.StartAsync(meterServerToClient: false);
        byte[] data = BlobService.Pattern(16 * MiB);
        long stop = host.Link.Forwarded + (2 * MiB);
        host.Link.Allow(stop);
        Task<byte[]> upload = host.Blobs.Echo(data);
        await Hosts.WaitUntilAsync(() => host.Link.Forwarded == stop && host.ServerConnection.Inbound.ReassemblyBytesRented > 0, "2 MiB of the upload to reach the server");

        ValueTask<int> add = host.Blobs.Add(2, 3);
        host.Link.Allow(stop + (512 * 1024)); // What the client had buffered, and the small call behind it.

        Assert.Equal(5, await add.AsTask().WaitAsync(TestHost.Patience));
        Assert.False(upload.IsCompleted, "The upload completed before the small call.");
        Assert.True(host.Link.Forwarded < 3 * MiB, $"{host.Link.Forwarded} bytes went through before the small call's answer.");
        host.Link.Open();
        byte[] echoed = await upload.WaitAsync(TestHost.Patience);
        Assert.Equal(data, echoed);
        Assert.Equal(1, host.Service.Echoes);
        Assert.Equal(1, host.Service.Adds);
    }

    [Fact]
    public async Task A16MiBDownload_CompletesIntact_WhileASmallCallCompletesBetweenItsFragments()
    {
        await using Metered host = await Metered.StartAsync(meterServerToClient: true);
        long stop = host.Link.Forwarded + (2 * MiB);
        host.Link.Allow(stop);
        Task<byte[]> download = host.Blobs.Make(16 * MiB);
        await Hosts.WaitUntilAsync(() => host.Link.Forwarded == stop && host.ClientConnection.Inbound.ReassemblyBytesRented > 0, "2 MiB of the download to reach the client");

        ValueTask<int> add = host.Blobs.Add(2, 3);
        host.Link.Allow(stop + (512 * 1024)); // What the server had buffered, and the small answer behind it.

        Assert.Equal(5, await add.AsTask().WaitAsync(TestHost.Patience));
        Assert.False(download.IsCompleted, "The download completed before the small call.");
        Assert.True(host.Link.Forwarded < 3 * MiB, $"{host.Link.Forwarded} bytes went through before the small call's answer.");
        host.Link.Open();
        Assert.Equal(BlobService.Pattern(16 * MiB), await download.WaitAsync(TestHost.Patience));
        Assert.Equal(0L, host.ClientConnection.Inbound.LandingBytesReserved);
    }

    public static TheoryData<string, int> Sizes()
    {
        var data = new TheoryData<string, int>();
        foreach (string type in (string[])["byte[]", "ReadOnlyMemory<byte>", "ReadOnlySequence<byte>"])
        {
            foreach (int size in (int[])[0, 1, Fragment - 1, Fragment, Fragment + 1, 16 * MiB])
            {
                data.Add(type, size);
            }
        }

        return data;
    }

    [Theory]
    [MemberData(nameof(Sizes))]
    public async Task BytesOfEverySizeAroundAFragment_RoundTripByteForByte(string type, int size)
    {
        await using Metered host = await Metered.StartAsync(meterServerToClient: false);
        byte[] data = BlobService.Pattern(size);

        byte[] echoed = type switch
        {
            "byte[]" => await host.Bytes.EchoArray(data).WaitAsync(TestHost.Patience),
            "ReadOnlyMemory<byte>" => (await host.Bytes.EchoReadOnlyMemory(data).WaitAsync(TestHost.Patience)).ToArray(),
            _ => (await host.Bytes.EchoSequence(LargeBinaryCopyTests.ThreePieces(data)).WaitAsync(TestHost.Patience)).ToArray(),
        };

        Assert.Equal(data, echoed);
        await Hosts.WaitUntilAsync(() => host.ClientConnection.Inbound.ReassemblyBytesRented == 0, "the client to give back the answer's memory");
        Assert.Equal(0L, host.ServerConnection.Inbound.ReassemblyBytesRented);
        Assert.Equal(0L, host.ClientConnection.Inbound.LandingBytesReserved);
        Assert.Equal(0L, host.ServerConnection.Inbound.LandingBytesReserved);
    }

    [Fact]
    public async Task WithCompressionOnBothSides_A16MiBBinaryRoundTripsByteForByte()
    {
        MessagePackSerializerOptions compressed = MessagePackSerializerOptions.Standard.WithCompression(MessagePackCompression.Lz4BlockArray);
        await using Metered host = await Metered.StartAsync(meterServerToClient: false, compressed);
        byte[] data = new byte[16 * MiB];
        new Random(38).NextBytes(data);

        Assert.Equal(data, await host.Bytes.EchoArray(data).WaitAsync(TestHost.Patience));
        Assert.Equal(data, (await host.Bytes.EchoSequence(LargeBinaryCopyTests.ThreePieces(data)).WaitAsync(TestHost.Patience)).ToArray());
    }

    [Theory]
    [InlineData(false)]
    [InlineData(true)]
    public async Task AConnectionCutMidTransfer_FailsTheCall_AndBothSidesGiveBackTheMessagesMemory(bool download)
    {
        Metered host = await Metered.StartAsync(meterServerToClient: download);
        try
        {
            long stop = host.Link.Forwarded + (2 * MiB);
            host.Link.Allow(stop);
            Task<byte[]> transfer = download ? host.Blobs.Make(16 * MiB) : host.Blobs.Echo(BlobService.Pattern(16 * MiB));
            Mux.Connection.Inbound receiver = download ? host.ClientConnection.Inbound : host.ServerConnection.Inbound;
            await Hosts.WaitUntilAsync(() => host.Link.Forwarded == stop && receiver.LandingBytesReserved > 0, "2 MiB of the message to arrive, its bin landing");

            await host.Link.CutAsync();

            await Assert.ThrowsAsync<MuxConnectionException>(() => transfer.WaitAsync(TestHost.Patience));
            await host.ServerConnection.Completion.WaitAsync(TestHost.Patience);
            await Hosts.WaitUntilAsync(() => receiver.ReassemblyBytesRented == 0 && receiver.LandingBytesReserved == 0, "the receiver to give back the partial message");
            Mux.Connection.Outbound sender = download ? host.ServerConnection.Outbound : host.ClientConnection.Outbound;
            await Hosts.WaitUntilAsync(() => sender.Queued == (0, 0) && sender.QueuedBytes == 0, "the sender to drop the rest of its message");
        }
        finally
        {
            await host.DisposeAsync();
        }
    }

    /// <summary>A server with a <see cref="BlobService"/> and a <see cref="BytesService"/>, and a client, over a
    /// <see cref="ThrottledLink"/> metering the client's writes or, with <c>meterServerToClient</c>, the server's.</summary>
    private sealed class Metered : IAsyncDisposable
    {
        private Metered(ThrottledLink link, MuxServer server, BlobService service, MuxClient client)
        {
            Link = link;
            Server = server;
            Service = service;
            Client = client;
            Blobs = client.CreateProxy<IBlobService>();
            Bytes = client.CreateProxy<IBytesService>();
            ServerConnection = server.Connections.Single();
            ClientConnection = client.Connection;
        }

        public ThrottledLink Link { get; }

        public MuxServer Server { get; }

        public BlobService Service { get; }

        public MuxClient Client { get; }

        public IBlobService Blobs { get; }

        public IBytesService Bytes { get; }

        public ServerConnection ServerConnection { get; }

        public ClientConnection ClientConnection { get; }

        public static async Task<Metered> StartAsync(bool meterServerToClient, MessagePackSerializerOptions? serializer = null)
        {
            var link = new ThrottledLink();
            var service = new BlobService();
            var serverOptions = new MuxServerOptions();
            var clientOptions = new MuxClientOptions { CallTimeout = TimeSpan.FromMinutes(2) };
            if (serializer is not null)
            {
                serverOptions.SerializerOptions = serializer;
                clientOptions.SerializerOptions = serializer;
            }

            var server = new MuxServer(serverOptions);
            server.AddService<IBlobService>(service);
            server.AddService<IBytesService>(new BytesService());
            IDuplexPipe metered = link.ClientSide, plain = link.ServerSide;
            server.Accept(meterServerToClient ? metered : plain);
            MuxClient client = await MuxClient.ConnectAsync(meterServerToClient ? plain : metered, clientOptions).WaitAsync(TestHost.Patience);
            return new Metered(link, server, service, client);
        }

        public async ValueTask DisposeAsync()
        {
            Link.Open();
            await Client.DisposeAsync().AsTask().WaitAsync(TestHost.Patience);
            using var stop = new CancellationTokenSource(TestHost.Patience);
            await Server.StopAsync(stop.Token).WaitAsync(TestHost.Patience + TestHost.Patience);
        }
    }
}
