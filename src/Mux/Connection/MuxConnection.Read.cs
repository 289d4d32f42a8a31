using System.Buffers;
using System.IO.Pipelines;
using Mux.Diagnostics;
using Mux.Protocol;

namespace Mux.Connection;

// The read side: one loop per connection. It only splits frames and hands each one on; payloads
// are slices of the pipe buffer until a subclass copies what must outlive the loop. It runs
// inline on the socket's receive completion (see SocketConnection), so it must never block and
// never run user code.
internal abstract partial class MuxConnection
{
    // Statistics, written only by the reader loop.
    private long _framesReceived;
    private long _reads;

    private async Task ReadLoopAsync()
    {
        MuxCloseReason reason = MuxCloseReason.RemoteClosed;
        Exception? error = null;
        try
        {
            while (true)
            {
                ReadResult result = await _input.ReadAsync().ConfigureAwait(false);
                if (result.IsCanceled || IsClosed)
                {
                    break; // Close() woke us up.
                }

                ReadOnlySequence<byte> buffer = result.Buffer;
                _reads++;
                long framesBefore = _framesReceived;
                try
                {
                    while (FrameReader.TryRead(ref buffer, MaxFrameSize, out Frame frame))
                    {
                        _framesReceived++;
                        ValueTask handled = OnFrameAsync(frame);
                        if (!handled.IsCompletedSuccessfully)
                        {
                            // Backpressure: stop reading until the subclass has room again. The
                            // buffer stays valid because we have not advanced past it yet.
                            await handled.ConfigureAwait(false);
                        }
                    }
                }
                finally
                {
                    // Consume what was parsed; everything else (a partial frame) was examined.
                    MuxTelemetry.OnRead(result.Buffer, buffer); // Before AdvanceTo frees the segments.
                    _input.AdvanceTo(buffer.Start, buffer.End);
                    MuxMetrics.Reads.Add(1);
                    MuxMetrics.FramesReceived.Add(_framesReceived - framesBefore);
                }

                if (result.IsCompleted)
                {
                    if (!buffer.IsEmpty)
                    {
                        throw new MuxProtocolException($"The connection ended in the middle of a frame ({buffer.Length} bytes of it arrived).");
                    }

                    break;
                }
            }
        }
        catch (MuxProtocolException ex)
        {
            reason = MuxCloseReason.ProtocolError;
            error = ex;
        }
        catch (Exception ex)
        {
            reason = MuxCloseReason.TransportError;
            error = ex;
        }
        finally
        {
            await _input.CompleteAsync().ConfigureAwait(false);
        }

        Close(reason, error);
    }
}
