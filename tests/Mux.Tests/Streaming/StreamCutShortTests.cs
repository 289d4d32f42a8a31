using System.Net;
using MessagePack;
using Mux.Protocol;
using Mux.Tests.Infrastructure;
using Mux.Tests.Protocol;
using static Mux.Tests.Protocol.ProtocolTestHelpers;

namespace Mux.Tests.Streaming;

/// <summary>A handler that reads its client's stream only once its call was cancelled.</summary>
[MuxService]
public interface ICutShortReader
{
    /// <summary>Waits for its token, then reads <paramref name="values"/> to its end.</summary>
    Task ReadAfterCancel(IAsyncEnumerable<int> values, CancellationToken cancellationToken = default);
}

/// <summary>Records how the read after the cancel ended: the items read, or the exception.</summary>
public sealed class CutShortReader : ICutShortReader
{
    public TaskCompletionSource<object> Ended { get; } = new(TaskCreationOptions.RunContinuationsAsynchronously);

    public async Task ReadAfterCancel(IAsyncEnumerable<int> values, CancellationToken cancellationToken = default)
    {
        try
        {
            await Task.Delay(Timeout.Infinite, cancellationToken);
        }
        catch (OperationCanceledException)
        {
            // The Cancel (or the close) came: only now read what the client sent.
        }

        try
        {
            var read = new List<int>();
            await foreach (int value in values)
            {
                read.Add(value);
            }

            Ended.TrySetResult(read);
        }
        catch (Exception ex)
        {
            Ended.TrySetResult(ex);
            throw;
        }
    }
}

/// <summary>A client's stream that ended (StreamEnd) and was then cut short (Cancel) before its
/// handler read it: the items still buffered are dropped, so the handler must not see a stream that
/// simply ended, as if it had been sent nothing more.</summary>
public sealed class StreamCutShortTests
{
    private static readonly uint ReadAfterCancelId = MuxMethodId.Compute("Mux.Tests.Streaming.ICutShortReader.ReadAfterCancel");

    private static byte[] Item(uint callId, int value) =>
        WriteFrame(FrameType.StreamItem, callId, 0, new RawBody(MessagePackSerializer.Serialize(value)));

    [Theory]
    [InlineData(false)]
    [InlineData(true)]
    public async Task AClientStreamThatEndedThenWasCutShort_BeforeItsHandlerReadIt_EndsTheHandlersReadWithOperationCanceled(bool connectionLost)
    {
        var service = new CutShortReader();
        var server = new MuxServer(new MuxServerOptions { EndPoint = new IPEndPoint(IPAddress.Loopback, 0) });
        server.AddService<ICutShortReader>(service);
        await server.StartAsync().WaitAsync(TestHost.Patience);
        await using (server)
        {
            RawMuxPeer raw = await RawMuxPeer.ConnectAsync(server.LocalEndPoint!);
            await using (raw)
            {
                await raw.HandshakeAsync();

                // All in one write: the server reads the whole stream and its end before the handler
                // (woken by the Cancel, or by the close that follows) reads anything.
                byte[] frames =
                [
                    .. WriteFrame(FrameType.Request, 1, ReadAfterCancelId, new RawBody([0x90])),
                    .. Item(1, 1), .. Item(1, 2), .. Item(1, 3),
                    .. WriteRawFrame(FrameType.StreamEnd, 1, []),
                    .. (connectionLost ? [] : WriteRawFrame(FrameType.Cancel, 1, [])),
                ];
                await raw.SendAsync(frames);
            }

            // Disposed: the connection is lost, or (after the Cancel) goes unused.
            object ended = await service.Ended.Task.WaitAsync(TestHost.Patience);
            Assert.IsAssignableFrom<OperationCanceledException>(ended);
        }
    }
}
