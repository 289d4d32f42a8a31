using System.IO.Pipelines;
using Mux.Diagnostics;

namespace Mux.Connection;

// The writer role: one thread at a time (the one that took _writerActive) copies what is queued into the PipeWriter and
// flushes. A sender on a quiet connection takes the role itself; otherwise the role runs as a thread-pool work item, the
// writer loop, for as long as frames keep arriving, so that everything queued while a flush ran goes out in the next one.
internal sealed partial class Outbound : IThreadPoolWorkItem
{
    // 1 while a thread owns _output (writes, flushes, completes it); taken with CompareExchange. Once the connection is
    // closed, whoever completes the output keeps it at 1 forever.
    private int _writerActive;

    private readonly bool _sendsQueuedOnGracefulClose;

    // Written only by the writer role holder. The batching policy's bound counts from when the last turn took the queue.
    private long _framesSent;
    private long _flushes;
    private long _batchWaits;
    private long _turnStartedAt;
    private StageClock _stages;

    internal long FramesSent => Volatile.Read(ref _framesSent);

    internal long Flushes => Volatile.Read(ref _flushes);

    internal long BatchWaits => Volatile.Read(ref _batchWaits);

    internal StageTimes Stages => StageTimes.OfWriter(_stages.Read(_clock.TimestampFrequency));

    private bool IsWriterFree => Volatile.Read(ref _writerActive) == 0;

    private bool TryAcquireWriter() => IsWriterFree && Interlocked.CompareExchange(ref _writerActive, 1, 0) == 0;

    private void ScheduleDrain() => ThreadPool.UnsafeQueueUserWorkItem(this, preferLocal: false);

    // The writer loop: on the thread pool, holding the writer role.
    void IThreadPoolWorkItem.Execute() => FlushAndReleaseLocked(DrainQueueIntoOutputLocked(), handOffRemainingWork: false);

    // Copies every queued frame into the pipe, then one fragment of the message whose turn it is (or drops them all, once
    // closed). Returns the frames written.
    private int DrainQueueIntoOutputLocked()
    {
        long now = _clock.GetTimestamp();
        _turnStartedAt = now;
        _stages.Start(now); // stage clock: a writer turn starts gathering
        bool drop = DropsQueuedFrames;
        int frames = 0;
        if (_queue.QueuedFrames != 0)
        {
            frames = _queue.WriteFrames(_output, drop);
            SignalRoom(); // The writer took the queue: its bytes no longer count.
        }

        frames += _queue.WriteNextFragment(_output, drop, out bool madeRoom);
        if (madeRoom)
        {
            SignalRoom();
        }

        return frames;
    }

    // Flushes what was written, then gives up the writer role. If frames arrived meanwhile, the role is taken back: a
    // sender hands the work to the thread pool (its call should not wait on other calls' writes); the writer loop goes on.
    private void FlushAndReleaseLocked(int frames, bool handOffRemainingWork)
    {
        while (true)
        {
            if (frames > 0 && !IsClosed)
            {
                _framesSent += frames;
                _flushes++;
                MuxTelemetry.FramesSent.Add(frames);
                MuxTelemetry.Flushes.Add(1);
                MuxTelemetry.OnFlush(frames, _output);
                ValueTask<FlushResult> flush = default;
                try
                {
                    flush = _output.FlushAsync();
                }
                catch (Exception ex)
                {
                    _connection.Close(MuxCloseReason.TransportError, ex);
                }

                _stages.Stop(_clock.GetTimestamp()); // stage clock: the turn's flush call returned
                if (!flush.IsCompleted)
                {
                    // The socket is behind (backpressure): finish on the pool, keeping the role.
                    _ = AwaitFlushThenDrainAsync(flush);
                    return;
                }

                if (flush.IsCompletedSuccessfully && flush.Result.IsCompleted)
                {
                    _connection.Close(MuxCloseReason.TransportError, null);
                }
            }

            // Interlocked (a full fence) so that this release and the IsClosed and queue checks below cannot be reordered:
            // either we see a frame (WakeWriter's fence) or a close (MuxConnection.CloseCore's CAS on the cause) that raced
            // with us, or the racing thread sees the role free and takes care of it.
            Interlocked.Exchange(ref _writerActive, 0);
            if (IsClosed)
            {
                Complete();
                return;
            }

            if ((_queue.QueuedFrames == 0 && _queue.QueuedMessages == 0) || !TryAcquireWriter())
            {
                return;
            }

            // Between two fragments of a large message, go to the back of the thread pool's queue, so that the completions
            // of the small calls it interleaves with never wait for the whole transfer to find a thread.
            if (handOffRemainingWork || _queue.QueuedMessages > 0)
            {
                ScheduleDrain();
                return;
            }

            // A small batch, while more frames are expected: go to the back of the pool's queue once, still holding the
            // role, so that the handlers and continuations queued ahead add their frames to it (BatchingPolicy).
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

    private readonly struct WriterLoad(Outbound outbound) : IBatchLoad
    {
        public int QueuedFrames => outbound._queue.QueuedFrames;

        public int QueuedBytes => outbound._queue.QueuedBytes;

        public bool WorkQueued => ThreadPool.PendingWorkItemCount > 0;

        public bool IsQuiet => outbound.IsQuiet;

        public TimeProvider Clock => outbound._clock;

        public long TurnStartedAt => outbound._turnStartedAt;
    }

    private async Task AwaitFlushThenDrainAsync(ValueTask<FlushResult> flush)
    {
        try
        {
            FlushResult result = await flush.ConfigureAwait(false);
            if (result.IsCompleted)
            {
                _connection.Close(MuxCloseReason.TransportError, null);
            }
        }
        catch (Exception ex)
        {
            _connection.Close(MuxCloseReason.TransportError, ex);
        }

        // Still holding the role, now on a pool thread: carry on as the writer loop.
        FlushAndReleaseLocked(DrainQueueIntoOutputLocked(), handOffRemainingWork: false);
    }

    /// <summary>Completes the output if the connection is closed and nobody is writing. Whoever completes it keeps the
    /// writer role, so nothing can write after.</summary>
    internal void Complete()
    {
        if (IsClosed && TryAcquireWriter())
        {
            // Writes (graceful close) or drops every frame and fragment still queued; completing hands them to the transport.
            do
            {
                DrainQueueIntoOutputLocked();
            }
            while (_queue.QueuedMessages > 0);

            _queue.Close();
            _output.Complete();
        }
    }

    // At a graceful close (LocalShutdown, the idle close), a server's queued frames are the answers of the calls it drained,
    // which its client waits for; a client's are requests of calls the close has already failed.
    private bool DropsQueuedFrames =>
        IsClosed && !(_sendsQueuedOnGracefulClose && _connection.CloseReason is MuxCloseReason.LocalShutdown or MuxCloseReason.IdleTimeout);
}
