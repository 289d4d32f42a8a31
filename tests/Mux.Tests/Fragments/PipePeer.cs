using System.Buffers;
using System.IO.Pipelines;
using Mux.Protocol;
using Mux.Tests.Infrastructure;
using Mux.Tests.Protocol;

namespace Mux.Tests.Fragments;

/// <summary>The other end of an in-memory Mux connection, speaking the wire protocol by hand (as
/// <see cref="RawMuxPeer"/> does over TCP): the test decides which bytes go out, and reads what
/// comes in frame by frame. Every step is bounded by <see cref="TestHost.Patience"/>.</summary>
internal sealed class PipePeer(IDuplexPipe pipe)
{
    public async Task SendAsync(byte[] bytes) =>
        await pipe.Output.WriteAsync(bytes).AsTask().WaitAsync(TestHost.Patience);

    /// <summary>Reads until one whole frame has arrived and returns a copy of it; fails the test if
    /// the stream ends first.</summary>
    public async Task<ReceivedFrame> ExpectFrameAsync()
    {
        using var patience = new CancellationTokenSource(TestHost.Patience);
        while (true)
        {
            ReadResult result = await pipe.Input.ReadAsync(patience.Token);
            ReadOnlySequence<byte> buffer = result.Buffer;
            if (FrameReader.TryRead(ref buffer, 16 * 1024 * 1024, out Frame frame))
            {
                ReceivedFrame copy = ReceivedFrame.From(frame);
                pipe.Input.AdvanceTo(buffer.Start);
                return copy;
            }

            pipe.Input.AdvanceTo(buffer.Start, buffer.End);
            Assert.False(result.IsCompleted, "The other side ended the stream before a whole frame arrived.");
        }
    }
}
