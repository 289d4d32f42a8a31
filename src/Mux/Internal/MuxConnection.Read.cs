using System.Buffers;
using System.IO.Pipelines;
using Mux.Protocol;

namespace Mux.Internal;

// The read side: one loop per connection. It only splits frames and hands each one on; payloads
// are slices of the pipe buffer until a subclass copies what must outlive the loop. It runs
// inline on the socket's receive completion (see SocketConnection), so it must never block and
// never run user code.
internal abstract partial class MuxConnection
{
    // Statistics, written only by the reader loop.
    private long _framesReceived;

    // Whether the frame being handled is the only one its read brought. Reader loop only.
    private bool _frameIsAlone;

    /// <summary>
    /// Hands a frame's work (deserializing a response, running a handler) off the reader loop.
    /// Normally to the thread pool. But when the frame came alone and the connection is quiet,
    /// the thread that received it runs it, after handing the reading on to the pool: at low load
    /// that removes the thread hop that would otherwise dominate a call's latency, and because
    /// reading has moved on, the work still cannot hold up any other call.
    /// </summary>
    protected void Dispatch(IThreadPoolWorkItem work)
    {
        if (_frameIsAlone && IsQuiet && _transport.IsParsingOnReceivingThread)
        {
            _frameIsAlone = false;
            _transport.RunOnReceivingThread(work);
            return;
        }

        ThreadPool.UnsafeQueueUserWorkItem(work, preferLocal: false);
    }
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
                    bool hasFrame = FrameReader.TryRead(ref buffer, MaxFrameSize, out Frame frame);
                    bool firstInRead = true;
                    while (hasFrame)
                    {
                        _framesReceived++;

                        // Look one frame ahead: a frame alone in its read may be run by the
                        // receiving thread itself (see Dispatch).
                        ReadOnlySequence<byte> rest = buffer;
                        bool hasNext = FrameReader.TryRead(ref rest, MaxFrameSize, out Frame next);
                        _frameIsAlone = firstInRead && !hasNext;

                        ValueTask handled = OnFrameAsync(frame);
                        _frameIsAlone = false;
                        if (!handled.IsCompletedSuccessfully)
                        {
                            // Backpressure: stop reading until the subclass has room again. The
                            // buffer stays valid because we have not advanced past it yet.
                            await handled.ConfigureAwait(false);
                        }

                        buffer = rest;
                        frame = next;
                        hasFrame = hasNext;
                        firstInRead = false;
                    }
                }
                finally
                {
                    // Consume what was parsed; everything else (a partial frame) was examined.
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
