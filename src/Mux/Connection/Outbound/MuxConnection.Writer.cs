using System.IO.Pipelines;
using Mux.Diagnostics;

namespace Mux.Connection;

// The writer role: exactly one thread at a time (the one that took _writerActive) copies what is
// queued into the PipeWriter and flushes. A sender on a quiet connection takes the role itself
// (MuxConnection.Send.cs); otherwise the role runs as a thread-pool work item, the writer loop,
// for as long as frames keep arriving, so that everything queued while a flush ran goes out in
// the next flush and one socket send.
internal abstract partial class MuxConnection : IThreadPoolWorkItem
{
    // 1 while a thread owns _output (writes, flushes, completes it); taken with CompareExchange.
    // Once the connection is closed, whoever completes the output keeps it at 1 forever.
    private int _writerActive;

    // Statistics, written only by the writer role holder.
    private long _framesSent;
    private long _flushes;
    private long _batchWaits;

    // TimeProvider timestamp at which the current (or last) writer turn took the queue, for the
    // batching policy's bound. Written and read only by the writer role holder.
    private long _turnStartedAt;

    /// <summary>Times the writer loop let a small batch wait for more frames (BatchingPolicy).</summary>
    internal long BatchWaits => Volatile.Read(ref _batchWaits);

    private bool IsWriterFree => Volatile.Read(ref _writerActive) == 0;

    private bool TryAcquireWriter() =>
        IsWriterFree && Interlocked.CompareExchange(ref _writerActive, 1, 0) == 0;

    private void ScheduleDrain() => ThreadPool.UnsafeQueueUserWorkItem(this, preferLocal: false);

    /// <summary>The writer loop: runs on the thread pool, holding the writer role, for as long as
    /// frames keep arriving.</summary>
    void IThreadPoolWorkItem.Execute() =>
        FlushAndReleaseLocked(DrainQueueIntoOutputLocked(), handOffRemainingWork: false);

    /// <summary>Copies every queued frame into the pipe, then one fragment of the message whose
    /// turn it is, after any frame queued meanwhile if that fragment is its first (or drops them
    /// all, once closed). Returns the frames written. Caller holds the writer role.</summary>
    private int DrainQueueIntoOutputLocked()
    {
        long now = TimeProvider.GetTimestamp();
        _turnStartedAt = now;
        _stages.StartWriter(now); // stage clock: a writer turn starts gathering
        bool drop = DropsQueuedFrames;
        int frames = 0;
        if (_queue.QueuedFrames != 0)
        {
            frames = _queue.WriteFrames(_output, drop);
            SignalOutboundRoom(); // The writer took the queue: its bytes no longer count.
        }

        frames += _queue.WriteNextFragment(_output, drop, out bool madeRoom);
        if (madeRoom)
        {
            SignalOutboundRoom();
        }

        return frames;
    }

    /// <summary>
    /// Flushes what was written, then gives up the writer role. If frames arrived meanwhile, the
    /// role is taken back: a caller hands the work to the thread pool (its own call should not wait
    /// on other calls' writes), the writer loop keeps going. Caller holds the role.
    /// </summary>
    private void FlushAndReleaseLocked(int frames, bool handOffRemainingWork)
    {
        while (true)
        {
            if (frames > 0 && !IsClosed)
            {
                _framesSent += frames;
                _flushes++;
                MuxMetrics.FramesSent.Add(frames);
                MuxMetrics.Flushes.Add(1);
                MuxTelemetry.OnFlush(frames, _output);
                ValueTask<FlushResult> flush = default;
                try
                {
                    flush = _output.FlushAsync();
                }
                catch (Exception ex)
                {
                    Close(MuxCloseReason.TransportError, ex);
                }

                _stages.StopWriter(TimeProvider.GetTimestamp()); // stage clock: the turn's flush call returned
                if (!flush.IsCompleted)
                {
                    // The socket is behind (backpressure): finish on the pool, keeping the role.
                    _ = AwaitFlushThenDrainAsync(flush);
                    return;
                }

                if (flush.IsCompletedSuccessfully && flush.Result.IsCompleted)
                {
                    Close(MuxCloseReason.TransportError, null);
                }
            }

            // Interlocked (a full fence) so that this release and the IsClosed/queue checks below
            // cannot be reordered: either we see a frame or close that raced with us, or the racing
            // thread sees the role free and takes care of it.
            Interlocked.Exchange(ref _writerActive, 0);
            if (IsClosed)
            {
                CompleteOutputIfIdle();
                return;
            }

            if ((_queue.QueuedFrames == 0 && _queue.QueuedMessages == 0) || !TryAcquireWriter())
            {
                return;
            }

            // A large message keeps the writer busy for many turns: between two of its fragments,
            // go to the back of the thread pool's queue, so that the completions of the small
            // calls it interleaves with never wait for the whole transfer to find a thread.
            if (handOffRemainingWork || _queue.QueuedMessages > 0)
            {
                ScheduleDrain();
                return;
            }

            // A small batch, while more frames are expected: go to the back of the pool's queue
            // once, still holding the role, so that the handlers and continuations queued ahead
            // add their frames to it; Execute then flushes whatever is queued, whatever its size.
            // Without this, free cores make the loop flush a few frames per send (BatchingPolicy).
            var load = new WriterLoad(this);
            if (BatchingPolicy.ShouldWait(ref load))
            {
                _batchWaits++;
                ScheduleDrain();
                return;
            }

            frames = DrainQueueIntoOutputLocked();
        }
    }

    /// <summary>What the batching policy asks of this connection, read only as it asks.</summary>
    private readonly struct WriterLoad(MuxConnection connection) : IBatchLoad
    {
        public int QueuedFrames => connection._queue.QueuedFrames;

        public int QueuedBytes => connection._queue.QueuedBytes;

        public bool WorkQueued => ThreadPool.PendingWorkItemCount > 0;

        public bool IsQuiet => connection.IsQuiet;

        public TimeProvider Clock => connection.TimeProvider;

        public long TurnStartedAt => connection._turnStartedAt;
    }

    private async Task AwaitFlushThenDrainAsync(ValueTask<FlushResult> flush)
    {
        try
        {
            FlushResult result = await flush.ConfigureAwait(false);
            if (result.IsCompleted)
            {
                Close(MuxCloseReason.TransportError, null);
            }
        }
        catch (Exception ex)
        {
            Close(MuxCloseReason.TransportError, ex);
        }

        // Still holding the role, now on a pool thread: carry on as the writer loop.
        FlushAndReleaseLocked(DrainQueueIntoOutputLocked(), handOffRemainingWork: false);
    }

    /// <summary>Completes the output if the connection is closed and nobody is writing. Whoever
    /// completes it keeps the writer role, so nothing can write after completion.</summary>
    private void CompleteOutputIfIdle()
    {
        if (IsClosed && TryAcquireWriter())
        {
            // Writes what is still queued (graceful close) or drops it, every fragment of every
            // message included; completing the output hands everything written to the transport's
            // send loop.
            do
            {
                DrainQueueIntoOutputLocked();
            }
            while (_queue.QueuedMessages > 0);

            _queue.Close();
            _output.Complete();
        }
    }

    /// <summary>
    /// Whether frames still queued when the connection closes with
    /// <see cref="MuxCloseReason.LocalShutdown"/> (or the server's graceful idle close) are sent
    /// rather than dropped. The server's are the responses of the calls it drained, which the
    /// client waits for; a client's are requests of calls that the close has already failed.
    /// </summary>
    protected virtual bool SendsQueuedFramesOnGracefulClose => false;

    private bool DropsQueuedFrames =>
        IsClosed && !(SendsQueuedFramesOnGracefulClose && CloseReason is MuxCloseReason.LocalShutdown or MuxCloseReason.IdleTimeout);
}
