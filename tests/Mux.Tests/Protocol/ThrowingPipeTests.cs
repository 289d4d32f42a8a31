using System.IO.Pipelines;
using Mux.Protocol;
using Mux.Tests.Fragments;
using Mux.Tests.Infrastructure;

namespace Mux.Tests.Protocol;

/// <summary>A pipe of the application's whose reader throws as it is completed (a PipeReader over
/// a stream that throws as it is disposed, say): the connection over it still closes when its
/// reading ends, and the calls on it fail, rather than waiting forever on a connection that reads
/// nothing more and never closes.</summary>
public sealed class ThrowingPipeTests
{
    [Theory]
    [InlineData(true)]
    [InlineData(false)]
    public async Task AReaderThatThrowsAsItCompletes_DoesNotKeepTheConnectionOpen_NorItsCallWaiting(bool malformed)
    {
        var toServer = new Pipe();
        var toClient = new Pipe();
        var peer = new PipePeer(new Duplex(toServer.Reader, toClient.Writer));
        Task<MuxClient> connecting = MuxClient.ConnectAsync(new Duplex(new ThrowingOnCompleteReader(toClient.Reader), toServer.Writer), new MuxClientOptions { CallTimeout = Timeout.InfiniteTimeSpan, KeepAliveInterval = Timeout.InfiniteTimeSpan });
        Assert.Equal(FrameType.Hello, (await peer.ExpectFrameAsync()).Type);
        await peer.SendAsync(FragmentWire.PlainHelloAck());
        await using MuxClient client = await connecting.WaitAsync(TestHost.Patience);
        Task<string> call = client.CreateProxy<ITestService>().Echo("waiting");
        await peer.ExpectFrameAsync();

        if (malformed)
        {
            await peer.SendAsync([0x06, 0x00, 0x00, 0x00, 0xee, 0x00, 0x01, 0x00, 0x00, 0x00]);
        }
        else
        {
            await toClient.Writer.CompleteAsync();
        }

        var ex = await Assert.ThrowsAsync<MuxConnectionException>(() => call.WaitAsync(TestHost.Patience));
        Assert.Equal(malformed ? MuxCloseReason.ProtocolError : MuxCloseReason.TransportError, ex.Reason);
        Assert.Contains(malformed ? "Unknown frame type 238" : "disposed", ex.Message, StringComparison.Ordinal);
        Assert.False(client.IsConnected);
    }

    private sealed record Duplex(PipeReader Input, PipeWriter Output) : IDuplexPipe;

    /// <summary>Reads from <paramref name="inner"/>; completing it throws, as a stream's Dispose may.</summary>
    private sealed class ThrowingOnCompleteReader(PipeReader inner) : PipeReader
    {
        public override void AdvanceTo(SequencePosition consumed) => inner.AdvanceTo(consumed);

        public override void AdvanceTo(SequencePosition consumed, SequencePosition examined) => inner.AdvanceTo(consumed, examined);

        public override void CancelPendingRead() => inner.CancelPendingRead();

        public override void Complete(Exception? exception = null)
        {
            inner.Complete(exception);
            throw new IOException("The stream under the pipe failed as it was disposed.");
        }

        public override ValueTask<ReadResult> ReadAsync(CancellationToken cancellationToken = default) => inner.ReadAsync(cancellationToken);

        public override bool TryRead(out ReadResult result) => inner.TryRead(out result);
    }
}
