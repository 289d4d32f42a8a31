using System.Buffers;
using System.Diagnostics.CodeAnalysis;
using System.IO.Pipelines;
using Mux.Diagnostics;
using Mux.Protocol;

namespace Mux.Connection;

// The write side. Frames are serialized on the caller's thread into a thread-local staging buffer,
// so serialization runs in parallel on every caller's core and a serializer exception fails only
// that call (nothing half-written ever reaches the pipe). Then exactly one thread at a time, the
// one holding the writer role (_writerActive), copies frames into the PipeWriter and flushes:
//   - idle: the caller takes the role itself, writes, and flushes: no thread hop for a lone call;
//   - busy: the caller appends its frame's bytes to _outbound and the role holder picks them all
//     up, so every frame that queued up while the previous flush ran goes out in one flush and
//     one send. _outbound is a byte buffer owned by the connection, double-buffered with
//     _draining, so queueing a frame is one short lock and one copy, and allocates nothing: a
//     buffer (or a rented array) per queued frame ran the array pool dry with hundreds queued.
internal abstract partial class MuxConnection : IThreadPoolWorkItem
{
    // A staging buffer that grew past this after a large frame is dropped rather than kept per thread.
    private const int MaxRetainedStagingSize = 64 * 1024;

    // Per-thread staging buffer for encoding a frame before it is known to be complete and valid.
    [ThreadStatic]
    private static PooledBufferWriter? t_staging;

    // A drained buffer that grew past this (a burst of large frames) is replaced by a small one.
    // 500 callers' 5.4 KB answers queue 2.7 MB at once: at 1 MiB every such burst regrew the
    // buffer through new 1, 2 and 4 MiB arrays (93 % of the server's bytes in a list100 profile).
    private const int MaxRetainedOutboundSize = 4 * 1024 * 1024;

    private readonly Lock _outboundLock = new();

    // Encoded frames waiting for the writer role, back to back. Any thread appends under
    // _outboundLock; the role holder swaps it with _draining under the lock.
    private PooledBufferWriter _outbound = new(4096);

    // Frames in _outbound. Written under _outboundLock; read without it as an emptiness hint.
    private volatile int _queuedFrames;

    // Bytes in _outbound. Written under _outboundLock; read without it by IsOutboundFull.
    private volatile int _queuedBytes;

    // Completed when the writer takes _outbound (or the connection closes), waking everyone waiting
    // for room: the server's reader loop, or a client's callers. Installed by the first waiter
    // (CompareExchange); completed and cleared by the writer, the close, or a waiter that finds room.
    private TaskCompletionSource? _outboundRoom;

    /// <summary>How many bytes may wait in the outbound queue before <see cref="IsOutboundFull"/>
    /// says so. Set by a subclass's constructor; unlimited by default.</summary>
    protected int MaxQueuedOutboundBytes { get; init; } = int.MaxValue;

    /// <summary>Whether the queue of frames waiting for the socket has reached
    /// <see cref="MaxQueuedOutboundBytes"/>: the peer is not reading what we send.</summary>
    protected bool IsOutboundFull => _queuedBytes >= MaxQueuedOutboundBytes;

    /// <summary>Completes when the outbound queue has room again (the writer took it, which it
    /// does only once the socket has accepted the previous batch) or the connection closed.</summary>
    protected Task WaitForOutboundRoomAsync()
    {
        TaskCompletionSource? room = Volatile.Read(ref _outboundRoom);
        if (room is null)
        {
            var created = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
            room = Interlocked.CompareExchange(ref _outboundRoom, created, null) ?? created;
        }

        Interlocked.MemoryBarrier(); // Publishing the waiter before the checks below: see SignalOutboundRoom.
        if (!IsOutboundFull || IsClosed)
        {
            SignalOutboundRoom(); // Completes ours (or a newer one, ours having been completed already).
        }

        return room.Task;
    }

    private void SignalOutboundRoom() => Interlocked.Exchange(ref _outboundRoom, null)?.TrySetResult();

    // The buffer the role holder copies into the pipe while callers fill _outbound. Only the
    // role holder touches it.
    private PooledBufferWriter _draining = new(4096);

    // 1 while a thread owns _output (writes, flushes, completes it); taken with CompareExchange.
    // Once the connection is closed, whoever completes the output keeps it at 1 forever.
    private int _writerActive;

    // Statistics, written only by the writer role holder.
    private long _framesSent;
    private long _flushes;

    /// <summary>Encodes a frame with a MessagePack body and sends it.</summary>
    /// <exception cref="MuxConnectionException">The connection is closed.</exception>
    /// <exception cref="InvalidOperationException">The frame is larger than the peer accepts.</exception>
    /// <exception cref="MessagePack.MessagePackSerializationException">The body could not be serialized.</exception>
    protected void SendFrame<TBody>(FrameType type, uint callId, uint methodId, ref TBody body, FrameFlags flags = FrameFlags.None)
        where TBody : struct, IFrameBody
    {
        ThrowIfClosed();
        PooledBufferWriter staging = t_staging ??= new PooledBufferWriter();
        staging.Reset();
        try
        {
            // The peer's limit applies to the length field, which does not count its own 4 bytes.
            int length = FrameWriter.Write(staging, type, callId, methodId, ref body, flags) - ProtocolConstants.LengthPrefixSize;
            if (length > PeerMaxFrameSize)
            {
                ThrowFrameTooLarge(type, length);
            }
        }
        catch
        {
            // Never reuse a buffer that a failed serializer may have left in a strange state.
            t_staging = null;
            staging.Dispose();
            throw;
        }

        Send(staging);
    }

    /// <summary>Sends a frame whose body is raw bytes (Cancel, Ping, Pong, GoAway).</summary>
    protected void SendRawFrame(FrameType type, uint callId, ReadOnlySpan<byte> body)
    {
        ThrowIfClosed();
        PooledBufferWriter staging = t_staging ??= new PooledBufferWriter();
        staging.Reset();
        FrameWriter.WriteRaw(staging, type, callId, body);
        Send(staging);
    }

    /// <summary>
    /// Whether this connection is quiet enough for a caller to write and flush inline. Under load
    /// the answer is no even when the queue happens to be empty for a moment: the frame goes to
    /// the writer loop, which by the time it runs has collected the frames of the other calls in
    /// flight, so they share one flush and one socket send instead of one send each.
    /// </summary>
    protected abstract bool IsQuiet { get; }

    private void Send(PooledBufferWriter staging)
    {
        if (IsQuiet && _queuedFrames == 0 && TryAcquireWriter())
        {
            // Idle fast path: write our frame and whatever queued meanwhile, then flush ourselves.
            _output.Write(staging.WrittenSpan);
            ReleaseStagingIfOversized(staging);

            int frames = 1 + DrainQueueIntoOutputLocked();
            FlushAndReleaseLocked(frames, handOffRemainingWork: true);
            return;
        }

        // Busy: queue the bytes and make sure someone will write them.
        lock (_outboundLock)
        {
            _outbound.Write(staging.WrittenSpan);
            _queuedFrames++;
            _queuedBytes = _outbound.WrittenCount;
        }

        ReleaseStagingIfOversized(staging);

        // A full fence between publishing the frame and looking at the role: paired with the
        // releaser's Interlocked.Exchange, either it sees our frame or we see the role free.
        Interlocked.MemoryBarrier();
        if (TryAcquireWriter())
        {
            ScheduleDrain();
        }
    }

    /// <summary>Drops a staging buffer that grew for one large frame instead of keeping it for the
    /// thread's lifetime. Call once its bytes have been copied out.</summary>
    private static void ReleaseStagingIfOversized(PooledBufferWriter staging)
    {
        if (staging.Buffer.Length > MaxRetainedStagingSize)
        {
            t_staging = null;
            staging.Dispose();
        }
    }

    private bool TryAcquireWriter() =>
        Volatile.Read(ref _writerActive) == 0 && Interlocked.CompareExchange(ref _writerActive, 1, 0) == 0;

    private void ScheduleDrain() => ThreadPool.UnsafeQueueUserWorkItem(this, preferLocal: false);

    /// <summary>The writer loop: runs on the thread pool, holding the writer role, for as long as
    /// frames keep arriving.</summary>
    void IThreadPoolWorkItem.Execute() =>
        FlushAndReleaseLocked(DrainQueueIntoOutputLocked(), handOffRemainingWork: false);

    /// <summary>Copies every queued frame into the pipe (or drops them, once closed). Caller holds
    /// the writer role.</summary>
    private int DrainQueueIntoOutputLocked()
    {
        if (_queuedFrames == 0)
        {
            return 0;
        }

        PooledBufferWriter batch;
        int frames;
        lock (_outboundLock)
        {
            batch = _outbound;
            _outbound = _draining;
            frames = _queuedFrames;
            _queuedFrames = 0;
            _queuedBytes = 0;
        }

        SignalOutboundRoom();

        if (DropsQueuedFrames)
        {
            frames = 0;
        }
        else
        {
            _output.Write(batch.WrittenSpan);
        }

        batch.Reset();
        if (batch.Buffer.Length > MaxRetainedOutboundSize)
        {
            batch.Dispose();
            batch = new PooledBufferWriter(4096);
        }

        _draining = batch;
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

            if (_queuedFrames == 0 || !TryAcquireWriter())
            {
                return;
            }

            if (handOffRemainingWork)
            {
                ScheduleDrain();
                return;
            }

            frames = DrainQueueIntoOutputLocked();
        }
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
            // Writes what is still queued (graceful close) or drops it; completing the output
            // hands everything written to the transport's send loop.
            DrainQueueIntoOutputLocked();
            _output.Complete();
        }
    }

    /// <summary>
    /// Whether frames still queued when the connection closes with
    /// <see cref="MuxCloseReason.LocalShutdown"/> (or the server's graceful idle close) are sent rather than dropped. The server's are the
    /// responses of the calls it drained, which the client waits for; a client's are requests of
    /// calls that the close has already failed.
    /// </summary>
    protected virtual bool SendsQueuedFramesOnGracefulClose => false;

    private bool DropsQueuedFrames =>
        IsClosed && !(SendsQueuedFramesOnGracefulClose && CloseReason is MuxCloseReason.LocalShutdown or MuxCloseReason.IdleTimeout);

    /// <summary>Bytes of frames queued for the writer role right now, for the queued-bytes gauge.</summary>
    internal int QueuedOutboundBytes
    {
        get
        {
            lock (_outboundLock)
            {
                return _outbound.WrittenCount;
            }
        }
    }

    private void ThrowIfClosed()
    {
        if (IsClosed)
        {
            throw CreateClosedException();
        }
    }

    [DoesNotReturn]
    private void ThrowFrameTooLarge(FrameType type, int length) =>
        throw new FrameTooLargeException($"The {type} frame is {length} bytes (not counting its 4-byte length prefix), over the peer's maximum frame size of {PeerMaxFrameSize} bytes. Send smaller messages or raise MaxFrameSize on the receiving side.");
}
