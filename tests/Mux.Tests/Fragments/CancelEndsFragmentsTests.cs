using System.Buffers;
using MessagePack;
using Mux.Client;
using Mux.Protocol;
using Mux.Server;
using Mux.Tests.Infrastructure;
using Mux.Tests.Protocol;
using static Mux.Tests.Protocol.ProtocolTestHelpers;

namespace Mux.Tests.Fragments;

/// <summary>
/// The handshake setting <c>cancelEndsFragments</c> (docs/protocol.md, *Fragments*): when both
/// sides announce it, a Request still in fragments ends at its Cancel, so its sender sends no more
/// of it and its receiver expects none; when the peer does not, the sender still sends all of it
/// and the receiver drops it as it arrives. A Mux client and server both announce it.
/// </summary>
public sealed class CancelEndsFragmentsTests
{
    private static readonly uint s_upload = MuxMethodId.Compute("Mux.Tests.Fragments.IUploadService.Upload");
    private static readonly uint s_add = MuxMethodId.Compute("Mux.Tests.Fragments.IUploadService.Add");
    private static readonly uint s_blobAdd = MuxMethodId.Compute("Mux.Tests.Fragments.IBlobService.Add");

    [Theory]
    [InlineData(true)]
    [InlineData(false)]
    public async Task AClientCancellingARequestInFragments_SendsNoMoreOfIt_OnlyWhenTheServerAnnouncedCancelEndsFragments(bool announced)
    {
        var link = new ThrottledLink();
        var server = new PipePeer(link.ServerSide);
        Task<MuxClient> connecting = MuxClient.ConnectAsync(link.ClientSide, new MuxClientOptions { FragmentSize = 1024 });
        ReceivedFrame hello = await server.ExpectFrameAsync();
        Assert.Equal(FrameType.Hello, hello.Type);
        Assert.True(HandshakeSettings.Parse(new ReadOnlySequence<byte>(hello.Payload)).CancelEndsFragments, "The client's Hello does not announce cancelEndsFragments.");
        await server.SendAsync(WriteHelloFrame(FrameType.HelloAck, new HandshakeSettings(ProtocolConstants.Version, 4 * 1024 * 1024, 100, null) { CancelEndsFragments = announced }));
        await using MuxClient client = await connecting.WaitAsync(TestHost.Patience);
        IUploadService proxy = client.CreateProxy<IUploadService>();
        ClientConnection connection = client.Connection;

        // A 1 MiB Request in 1 KiB fragments, stopped with 64 KiB of it through.
        long allowance = link.Forwarded + (64 * 1024);
        link.Allow(allowance);
        using var cancellation = new CancellationTokenSource();
        Task<int> upload = proxy.Upload(BlobService.Pattern(1024 * 1024), cancellation.Token);
        await Hosts.WaitUntilAsync(() => link.Forwarded == allowance, "64 KiB of the Request to go through");
        await cancellation.CancelAsync();
        await Assert.ThrowsAnyAsync<OperationCanceledException>(() => upload.WaitAsync(TestHost.Patience));
        link.Open();
        await Hosts.WaitUntilAsync(() => connection.Outbound.QueuedBytes == 0, "the client to finish with the cancelled Request");
        Task<int> after = proxy.Add(2, 3).AsTask(); // Queued after whatever the client still sent of it.

        // Everything the client sent, up to that call.
        var frames = new List<ReceivedFrame>();
        ReceivedFrame frame;
        do
        {
            frame = await server.ExpectFrameAsync();
            frames.Add(frame);
        }
        while (!(frame.Type == FrameType.Request && frame.MethodId == s_add));

        int cancelAt = frames.FindIndex(f => f.Type == FrameType.Cancel);
        Assert.True(cancelAt > 0, "The client sent no Cancel.");
        uint id = frames[cancelAt].CallId;
        ReceivedFrame first = Assert.Single(frames, f => f.Type == FrameType.Request && f.CallId == id);
        Assert.Equal(s_upload, first.MethodId);
        Assert.Equal(FrameFlags.MoreFragments, first.Flags & FrameFlags.MoreFragments);
        int continuationsAfterCancel = frames.Skip(cancelAt).Count(f => f.Type == FrameType.Continuation && f.CallId == id);
        if (announced)
        {
            Assert.Equal(0, continuationsAfterCancel);
            Assert.True(link.Forwarded < 512 * 1024, $"{link.Forwarded} bytes went through for a Request cancelled after 64 KiB.");
        }
        else
        {
            // All of it follows, to its last Continuation (the one without MoreFragments).
            Assert.True(continuationsAfterCancel > 0, "Nothing of the Request followed its Cancel.");
            Assert.Equal(FrameFlags.None, frames.Last(f => f.Type == FrameType.Continuation && f.CallId == id).Flags);
            Assert.True(link.Forwarded > 1024 * 1024, $"Only {link.Forwarded} bytes went through: the rest of the Request was not sent.");
        }

        await server.SendAsync(WriteFrame(FrameType.Response, frames[^1].CallId, 0, new RawBody(MessagePackSerializer.Serialize(5))));
        Assert.Equal(5, await after.WaitAsync(TestHost.Patience));
        await link.ServerSide.Output.CompleteAsync(); // The server's side closes: the client need not wait for it.
    }

    [Fact]
    public async Task AServer_AnnouncesCancelEndsFragments_AndExpectsNoMoreOfARequestAfterItsCancel_FromAClientThatAnnouncedIt()
    {
        await using BlobHost host = await BlobHost.StartAsync();
        ServerConnection client = host.Server.Connections.Single();
        await using RawMuxPeer raw = await RawMuxPeer.ConnectAsync(host.Server.LocalEndPoint!);
        Assert.True(await HandshakeAsync(raw, announce: true), "The server's HelloAck does not announce cancelEndsFragments.");
        ServerConnection connection = host.Server.Connections.Single(c => c != client);
        byte[] message = FragmentWire.RequestMessage("Echo", FragmentWire.BytesArgument(new byte[20_000]));

        await raw.SendAsync(Concat(
            FragmentWire.First(FrameType.Request, 1, (uint)message.Length, message[..4000]),
            FragmentWire.Whole(FrameType.Cancel, 1, [])));

        await ExpectCanceledAsync(raw, 1);
        Assert.Equal(0L, connection.Inbound.ReassemblyBytesRented);

        // The Request ended at its Cancel: a Continuation of it breaks the sequence.
        await raw.SendAsync(FragmentWire.Continuation(1, message[4000..], more: false));
        await raw.AssertClosedByOtherSideAsync();
        await connection.Completion.WaitAsync(TestHost.Patience);
        Assert.Equal(MuxCloseReason.ProtocolError, connection.CloseReason);
        Assert.Equal(0, host.Service.Echoes);
    }

    [Fact]
    public async Task AServer_DropsTheRestOfARequestAfterItsCancel_FromAClientThatDidNotAnnounceCancelEndsFragments_AndKeepsServing()
    {
        await using BlobHost host = await BlobHost.StartAsync();
        ServerConnection client = host.Server.Connections.Single();
        await using RawMuxPeer raw = await RawMuxPeer.ConnectAsync(host.Server.LocalEndPoint!);
        await HandshakeAsync(raw, announce: false);
        ServerConnection connection = host.Server.Connections.Single(c => c != client);
        byte[] message = FragmentWire.RequestMessage("Echo", FragmentWire.BytesArgument(new byte[20_000]));

        await raw.SendAsync(Concat(
            FragmentWire.First(FrameType.Request, 1, (uint)message.Length, message[..4000]),
            FragmentWire.Whole(FrameType.Cancel, 1, [])));

        await ExpectCanceledAsync(raw, 1);
        Assert.Equal(0L, connection.Inbound.ReassemblyBytesRented);

        // The rest still comes, around a call that is served meanwhile, and is dropped.
        await raw.SendAsync(Concat(
            FragmentWire.Continuation(1, message[4000..12000], more: true),
            WriteFrame(FrameType.Request, 2, s_blobAdd, new RawBody(MessagePackSerializer.Serialize((2, 3)))),
            FragmentWire.Continuation(1, message[12000..], more: false),
            WriteFrame(FrameType.Request, 3, s_blobAdd, new RawBody(MessagePackSerializer.Serialize((4, 5))))));

        ReceivedFrame[] sums = [await raw.ExpectFrameAsync(), await raw.ExpectFrameAsync()];
        Assert.Equal(
            [(FrameType.Response, 2u, 5), (FrameType.Response, 3u, 9)],
            sums.Select(f => (f.Type, f.CallId, MessagePackSerializer.Deserialize<int>(f.Payload))).OrderBy(f => f.CallId));
        Assert.Equal(0, host.Service.Echoes);
        Assert.Equal(0L, connection.Inbound.ReassemblyBytesRented);
        Assert.False(connection.IsClosed);
    }

    /// <summary>Sends a Hello that announces cancelEndsFragments or not; returns whether the
    /// server's HelloAck announces it.</summary>
    private static async Task<bool> HandshakeAsync(RawMuxPeer raw, bool announce)
    {
        await raw.SendAsync(WriteHelloFrame(FrameType.Hello, new HandshakeSettings(ProtocolConstants.Version, 4 * 1024 * 1024, int.MaxValue, null) { CancelEndsFragments = announce }));
        ReceivedFrame ack = await raw.ExpectFrameAsync();
        Assert.Equal(FrameType.HelloAck, ack.Type);
        return HandshakeSettings.Parse(new ReadOnlySequence<byte>(ack.Payload)).CancelEndsFragments;
    }

    /// <summary>The server's answer to a call cancelled while its Request was arriving.</summary>
    private static async Task ExpectCanceledAsync(RawMuxPeer raw, uint callId)
    {
        ReceivedFrame answer = await raw.ExpectFrameAsync();
        Assert.Equal((FrameType.Error, callId), (answer.Type, answer.CallId));
        ErrorBody error = ErrorBody.Read(answer.Payload);
        Assert.Equal(MuxStatusCode.Canceled, error.Code);
        Assert.Equal("IBlobService.Echo was canceled before its request had arrived whole; it was not run.", error.Message);
    }
}
