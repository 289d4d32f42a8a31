using Mux.Client;
using Mux.Server;
using Mux.Tests.Infrastructure;

namespace Mux.Tests.Fragments;

/// <summary>
/// A 16 MiB request (256 fragments of 64 KiB) stopped in the middle of its transfer: its caller
/// cancels, or the connection is lost. The server gives the partial message's pooled memory back
/// and runs nothing; the caller sees one OperationCanceledException or MuxConnectionException; the
/// other calls on the connection complete (with their values, or each with one
/// MuxConnectionException). The link between client and server is metered
/// (<see cref="ThrottledLink"/>), so "the middle" is a fixed point: 2 MiB of the request through.
/// </summary>
public sealed class FragmentedRequestCancelTests
{
    private const int MiB = 1024 * 1024;
    private const int HeldCalls = 3;

    [Fact]
    public async Task ACallerThatCancelsMidTransfer_GetsOperationCanceled_TheServerRunsNothingAndGivesItsMemoryBack_AndTheOtherCallsCompleteWithTheirValues()
    {
        await using Uplink uplink = await Uplink.StartAsync();
        (Task<int>[] held, Task<int> upload, CancellationTokenSource cancellation) = await uplink.StopUploadMidTransferAsync();
        using CancellationTokenSource _ = cancellation;

        await cancellation.CancelAsync();
        await Assert.ThrowsAnyAsync<OperationCanceledException>(() => upload.WaitAsync(TestHost.Patience));
        uplink.Link.Open();

        // Every call slot (4) is taken until the server answers the cancelled call: this one needs it.
        Assert.Equal(5, await uplink.Proxy.Add(2, 3).AsTask().WaitAsync(TestHost.Patience));
        Assert.Equal(0L, uplink.ServerConnection.Inbound.ReassemblyBytesRented);

        // Once the client has written what it still sends of the request (all of it, or nothing
        // more), a call behind it shows that the server's reader has gone past it.
        await Hosts.WaitUntilAsync(() => uplink.ClientConnection.Outbound.QueuedBytes == 0, "the client to finish with the cancelled request");
        Assert.Equal(9, await uplink.Proxy.Add(4, 5).AsTask().WaitAsync(TestHost.Patience));

        uplink.Service.ReleaseHeldCalls();
        Assert.Equal(Enumerable.Range(1, HeldCalls), await Task.WhenAll(held).WaitAsync(TestHost.Patience));
        await Hosts.WaitUntilAsync(() => uplink.ServerConnection.Incoming.Count == 0, "the server to finish its calls");
        Assert.True(uplink.Service.Uploads == 0, "The handler of the cancelled upload ran.");
        Assert.Equal(2, uplink.Service.Adds);
        Assert.Equal(0L, uplink.ServerConnection.Inbound.ReassemblyBytesRented);
        Assert.Equal(0, uplink.Client.PendingCalls);
        Assert.False(uplink.ServerConnection.IsClosed);
    }

    [Fact]
    public async Task ACancelledRequest_IsNotSentAnyFurther_BetweenAMuxClientAndServer()
    {
        await using Uplink uplink = await Uplink.StartAsync();
        (Task<int>[] held, Task<int> upload, CancellationTokenSource cancellation) = await uplink.StopUploadMidTransferAsync();
        using CancellationTokenSource _ = cancellation;
        long stoppedAt = uplink.Link.Forwarded;

        await cancellation.CancelAsync();
        await Assert.ThrowsAnyAsync<OperationCanceledException>(() => upload.WaitAsync(TestHost.Patience));
        uplink.Link.Open();
        await Hosts.WaitUntilAsync(() => uplink.ClientConnection.Outbound.QueuedBytes == 0, "the client to finish with the cancelled request");
        Assert.Equal(9, await uplink.Proxy.Add(4, 5).AsTask().WaitAsync(TestHost.Patience));

        // What the client had buffered when it was stopped (256 KiB) and the fragment being
        // written at the Cancel, not the 14 MiB left of the request.
        long after = uplink.Link.Forwarded - stoppedAt;
        Assert.True(after < MiB, $"{after} bytes went through after the upload was cancelled.");
        uplink.Service.ReleaseHeldCalls();
        Assert.Equal(Enumerable.Range(1, HeldCalls), await Task.WhenAll(held).WaitAsync(TestHost.Patience));
        Assert.True(uplink.Service.Uploads == 0, "The handler of the cancelled upload ran.");
        Assert.False(uplink.ServerConnection.IsClosed);
    }

    [Fact]
    public async Task AConnectionLostMidTransfer_FailsTheCallerAndEachOtherCallOnceWithMuxConnectionException_AndTheServerRunsNothingAndGivesItsMemoryBack()
    {
        await using Uplink uplink = await Uplink.StartAsync();
        (Task<int>[] held, Task<int> upload, CancellationTokenSource cancellation) = await uplink.StopUploadMidTransferAsync();
        using CancellationTokenSource _ = cancellation;

        await uplink.Link.CutAsync();

        await Assert.ThrowsAsync<MuxConnectionException>(() => upload.WaitAsync(TestHost.Patience));
        foreach (Task<int> call in held)
        {
            await Assert.ThrowsAsync<MuxConnectionException>(() => call.WaitAsync(TestHost.Patience));
        }

        await uplink.ServerConnection.Completion.WaitAsync(TestHost.Patience);
        Assert.Equal(0L, uplink.ServerConnection.Inbound.ReassemblyBytesRented);
        await Hosts.WaitUntilAsync(() => uplink.Service.HoldsCanceled == HeldCalls, "the held handlers to see the connection end");
        await Hosts.WaitUntilAsync(() => uplink.ServerConnection.Incoming.Count == 0, "the server to finish its calls");
        Assert.True(uplink.Service.Uploads == 0, "The handler of the upload ran.");
        Assert.Equal(0, uplink.Client.PendingCalls);
        await Hosts.WaitUntilAsync(() => uplink.Server.ActiveConnections == 0, "the server to forget the lost connection");
    }

    /// <summary>A server with an <see cref="UploadService"/> and a client, over a <see cref="ThrottledLink"/>.</summary>
    private sealed class Uplink : IAsyncDisposable
    {
        private Uplink(ThrottledLink link, MuxServer server, UploadService service, MuxClient client)
        {
            Link = link;
            Server = server;
            Service = service;
            Client = client;
            Proxy = client.CreateProxy<IUploadService>();
            ServerConnection = server.Connections.Single();
            ClientConnection = client.Connection;
        }

        public ThrottledLink Link { get; }

        public MuxServer Server { get; }

        public UploadService Service { get; }

        public MuxClient Client { get; }

        public IUploadService Proxy { get; }

        public ServerConnection ServerConnection { get; }

        public ClientConnection ClientConnection { get; }

        public static async Task<Uplink> StartAsync()
        {
            var link = new ThrottledLink();
            var service = new UploadService();

            // Four call slots: the held calls and the upload take them all.
            var server = new MuxServer(new MuxServerOptions { MaxConcurrentCallsPerConnection = HeldCalls + 1 });
            server.AddService<IUploadService>(service);
            server.Accept(link.ServerSide);
            MuxClient client = await MuxClient.ConnectAsync(link.ClientSide, new MuxClientOptions { CallTimeout = TimeSpan.FromMinutes(2) }).WaitAsync(TestHost.Patience);
            return new Uplink(link, server, service, client);
        }

        /// <summary>Starts the held calls, then a 16 MiB upload whose transfer stops with 2 MiB of
        /// it forwarded and the server reassembling it.</summary>
        public async Task<(Task<int>[] Held, Task<int> Upload, CancellationTokenSource Cancellation)> StopUploadMidTransferAsync()
        {
            Task<int>[] held = [.. Enumerable.Range(1, HeldCalls).Select(value => Proxy.Hold(value))];
            await Hosts.WaitUntilAsync(() => Service.Holding == HeldCalls, "the held calls to run");

            long allowance = Link.Forwarded + (2 * MiB);
            Link.Allow(allowance);
            var cancellation = new CancellationTokenSource();
            Task<int> upload = Proxy.Upload(BlobService.Pattern(16 * MiB), cancellation.Token);
            await Hosts.WaitUntilAsync(() => Link.Forwarded == allowance && ServerConnection.Inbound.ReassemblyBytesRented > 0, "2 MiB of the upload to reach the server");
            Assert.False(upload.IsCompleted);
            return (held, upload, cancellation);
        }

        public async ValueTask DisposeAsync()
        {
            Service.ReleaseHeldCalls();
            Link.Open();
            await Client.DisposeAsync().AsTask().WaitAsync(TestHost.Patience);
            using var stop = new CancellationTokenSource(TestHost.Patience);
            await Server.StopAsync(stop.Token).WaitAsync(TestHost.Patience + TestHost.Patience);
        }
    }
}
