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

    /// <summary>Called on the reader loop when the peer has ended its stream cleanly. Returns true
    /// to keep the connection open (a draining server still sends the responses it promised and
    /// then closes itself); false closes it now as <see cref="MuxCloseReason.RemoteClosed"/>.</summary>
    protected virtual bool OnPeerFinishedSending() => false;

    private async Task ReadLoopAsync()
    {
        MuxCloseReason reason = MuxCloseReason.RemoteClosed;
        Exception? error = null;
        bool keepOpen = false;
        try
        {
            while (true)
            {
                ReadResult result = await _input.ReadAsync().ConfigureAwait(false);
                if (IsClosed)
                {
                    if (result.IsCanceled || !_drainInput)
                    {
                        break; // Close() woke us up.
                    }

                    // A graceful close: discard what the peer still sends until it closes too.
                    _input.AdvanceTo(result.Buffer.End);
                    if (result.IsCompleted)
                    {
                        break;
                    }

                    continue;
                }

                if (result.IsCanceled)
                {
                    break;
                }

                ReadOnlySequence<byte> buffer = result.Buffer;
                long readStarted = StageClock.Now(); // stage clock: the read's buffer is in hand
                _reads++;
                NoteRead();
                long framesBefore = _framesReceived;
                try
                {
                    while (!IsClosed && FrameReader.TryRead(ref buffer, MaxFrameSize, out Frame frame))
                    {
                        _framesReceived++;
                        ValueTask handled = NeedsReassembly(frame) ? OnFragmentAsync(frame) : OnFrameAsync(frame);
                        if (!handled.IsCompletedSuccessfully)
                        {
                            // Backpressure: stop reading until the subclass has room again. The
                            // buffer stays valid because we have not advanced past it yet.
                            long pausedAt = StageClock.Now(); // stage clock: a backpressure wait is not reader work
                            await handled.ConfigureAwait(false);
                            readStarted += StageClock.Now() - pausedAt; // stage clock
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
                    _stages.AddReader(readStarted); // stage clock: the read is done
                }

                if (result.IsCompleted)
                {
                    if (!buffer.IsEmpty)
                    {
                        throw new MuxProtocolException($"The connection ended in the middle of a frame ({buffer.Length} bytes of it arrived).");
                    }

                    // The subclass may keep the connection open to answer what it promised; it closes itself.
                    keepOpen = OnPeerFinishedSending();
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
            ReleaseReassemblies();
            await _input.CompleteAsync().ConfigureAwait(false);
        }

        if (!keepOpen)
        {
            Close(reason, error);
        }
    }
}
