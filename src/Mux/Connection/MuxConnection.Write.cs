using System.Buffers;
using System.Collections.Concurrent;
using System.Diagnostics.CodeAnalysis;
using System.Runtime.InteropServices;
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
//     _draining, so queueing a small frame is one short lock and one copy, and allocates nothing: a
//     buffer (or a rented array) per queued frame ran the array pool dry with hundreds queued.
//     A large frame is not copied under the lock: its staging buffer itself is handed to the writer
//     (the thread takes a spare one), so the lock is held for a pointer store, whatever the size.
//     _outboundEntries keeps both kinds in the order they were queued: the one order point.
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

    // Frames at least this large are handed over in their staging buffer rather than copied into
    // _outbound: copying 5.4 KB list100 answers under _outboundLock kept a loaded server's senders
    // spinning on it (13-27 % of its running samples at 500 callers); a small frame's copy costs
    // about what a hand-over does.
    private const int HandOverFrameSize = 1024;

    // Staging buffers handed over and written, for threads that gave theirs away. Returned by
    // writers, taken by senders (any thread, any connection); at most MaxSpareStaging kept, each
    // at most MaxSpareStagingSize, so the process keeps 8 MiB for them at worst. The count is
    // approximate (incremented before the enqueue, decremented after the dequeue).
    private const int MaxSpareStaging = 512;
    private const int MaxSpareStagingSize = 16 * 1024;
    private static readonly ConcurrentQueue<PooledBufferWriter> s_spareStaging = new();
    private static int s_spareStagingCount;

    private readonly Lock _outboundLock = new();

    // What is queued, in order: ranges of _outbound (Owned null; consecutive copies share one) and
    // handed-over staging buffers. Appended under _outboundLock; swapped with _drainingEntries by
    // the role holder under the lock.
    private List<OutboundEntry> _outboundEntries = [];

    // The entries the role holder is writing; only it touches them.
    private List<OutboundEntry> _drainingEntries = [];

    // Encoded frames waiting for the writer role, back to back. Any thread appends under
    // _outboundLock; the role holder swaps it with _draining under the lock.
    private PooledBufferWriter _outbound = new(4096);

    // Frames queued (copied or handed over). Written under _outboundLock; read without it as an
    // emptiness hint.
    private volatile int _queuedFrames;

    // Bytes of the frames queued, plus one fragment for each message in _messages. Written under
    // _outboundLock; read without it by IsOutboundFull and the queued-bytes gauge.
    private volatile int _queuedBytes;

    // Messages over the fragment size, sent one fragment per writer turn, round robin, so that the
    // frames of other calls queued meanwhile go out between any two of their fragments. Senders
    // enqueue under _outboundLock; the role holder takes the head and puts it back at the tail.
    private readonly Queue<OutboundMessage> _messages = new();

    // Messages not yet completely written, including one the role holder has taken out of
    // _messages to write a fragment of. Written under _outboundLock; read without it as a hint.
    private volatile int _queuedMessages;

    // The message the role holder has taken out of _messages to write a fragment of, so that a
    // Cancel can still reach it (AbortRequestInFragments). Set and cleared under _outboundLock.
    private OutboundMessage? _writingMessage;

    // What the queued messages count against MaxQueuedOutboundBytes: one fragment each, not their
    // whole size, so that a transfer under way never makes the queue look full to small calls; a
    // peer that stops reading still fills it after a few messages. Guarded by _outboundLock.
    private int _messageCharge;

    /// <summary>The most message bytes (everything after the common header) sent in one frame;
    /// larger messages go in fragments. Set by a subclass's constructor.</summary>
    protected int FragmentSize { get; init; } = 64 * 1024;

    /// <summary>The largest message the peer accepts, from its handshake; unlimited until then.</summary>
    private int PeerMaxMessageSize { get; set; } = int.MaxValue;

    /// <summary>Whether the peer announced <c>cancelEndsFragments</c> (this side always does): a
    /// Cancel then ends a Request still in fragments both ways, so no fragment of it is sent after
    /// its Cancel, and none is expected after one. Set from the peer's handshake on the reader loop,
    /// before any call.</summary>
    private bool PeerEndsFragmentsOnCancel { get; set; }

    /// <summary>Where the peer sets its limits ("MuxServerOptions" for a client's peer), named in
    /// the message of a call that fails for being over them.</summary>
    private string PeerOptionsName => IsServer ? nameof(MuxClientOptions) : nameof(MuxServerOptions);

    // Completed when the writer takes _outbound (or the connection closes), waking everyone waiting
    // for room: the server's reader loop, or a client's callers. Installed by the first waiter
    // (CompareExchange); completed and cleared by the writer, the close, or a waiter that finds room.
    private TaskCompletionSource? _outboundRoom;

    /// <summary>How many bytes may wait in the outbound queue before <see cref="IsOutboundFull"/>
    /// says so. Set by a subclass's constructor; unlimited by default.</summary>
    internal int MaxQueuedOutboundBytes { get; init; } = int.MaxValue;

    /// <summary>Whether the queue of frames waiting for the socket has reached
    /// <see cref="MaxQueuedOutboundBytes"/>: the peer is not reading what we send.</summary>
    internal bool IsOutboundFull => _queuedBytes >= MaxQueuedOutboundBytes;

    /// <summary>Completes when the outbound queue has room again (the writer took it, which it
    /// does only once the socket has accepted the previous batch) or the connection closed.</summary>
    internal Task WaitForOutboundRoomAsync()
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

    /// <summary>Encodes a frame with a MessagePack body and sends it. <paramref name="whenWritten"/>,
    /// when given, is told once the frame is queued whole, or once the writer has written the last
    /// fragment of a message sent in fragments (see <see cref="IMessageWrittenListener"/>). With
    /// <c>defer</c>, the frame is queued without waking the writer: it goes out with the next frame
    /// sent without <c>defer</c>, or at <see cref="SendQueuedFrames"/>, so a producer of many small
    /// frames (a stream) pays one flush for all of them.</summary>
    /// <exception cref="MuxConnectionException">The connection is closed.</exception>
    /// <exception cref="InvalidOperationException">The frame is larger than the peer accepts.</exception>
    /// <exception cref="MessagePack.MessagePackSerializationException">The body could not be serialized.</exception>
    /// <returns>The frame's size on the wire (the message's, when it goes in fragments).</returns>
    internal int SendFrame<TBody>(FrameType type, uint callId, uint methodId, ref TBody body, FrameFlags flags = FrameFlags.None, IMessageWrittenListener? whenWritten = null, bool defer = false)
        where TBody : struct, IFrameBody
    {
        ThrowIfClosed();
        PooledBufferWriter staging = t_staging ??= new PooledBufferWriter();
        staging.Reset();
        int length;
        try
        {
            // The peer's limit applies to the length field, which does not count its own 4 bytes.
            length = FrameWriter.Write(staging, type, callId, methodId, ref body, flags) - ProtocolConstants.LengthPrefixSize;
            int fragmentSize = Math.Min(FragmentSize, PeerMaxFrameSize - ProtocolConstants.CommonHeaderSize - ProtocolConstants.FragmentTotalSize);
            if (length - ProtocolConstants.CommonHeaderSize > fragmentSize && callId != 0 && type is FrameType.Request or FrameType.Response or FrameType.Error)
            {
                if (length - ProtocolConstants.CommonHeaderSize > PeerMaxMessageSize)
                {
                    ThrowMessageTooLarge(type, length - ProtocolConstants.CommonHeaderSize);
                }

                // The staging buffer now belongs to the message; this thread gets a fresh one.
                t_staging = null;
                SendInFragments(new OutboundMessage(staging, fragmentSize) { WhenWritten = whenWritten });
                return length + ProtocolConstants.LengthPrefixSize;
            }

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

        Send(staging, defer);
        whenWritten?.OnMessageWritten();
        return length + ProtocolConstants.LengthPrefixSize;
    }

    /// <summary>Queues a message for the writer, which sends it one fragment per turn.</summary>
    private void SendInFragments(OutboundMessage message)
    {
        lock (_outboundLock)
        {
            _messages.Enqueue(message);
            _queuedMessages++;
            _messageCharge += message.FragmentSize;
            _queuedBytes += message.FragmentSize;
        }

        // A full fence between publishing the message and looking at the role: as in Send.
        Interlocked.MemoryBarrier();
        if (TryAcquireWriter())
        {
            ScheduleDrain();
        }
    }

    /// <summary>Writes one fragment of the message at the head of the queue and puts it back at
    /// the tail unless that was its last (or drops every message, once closed). Returns the frames
    /// written. Caller holds the writer role.</summary>
    private int WriteNextFragmentLocked()
    {
        if (_queuedMessages == 0)
        {
            return 0;
        }

        OutboundMessage message;
        bool aborted;
        lock (_outboundLock)
        {
            message = _messages.Dequeue();
            _writingMessage = message;
            aborted = message.Aborted;
        }

        if (DropsQueuedFrames)
        {
            message.Dispose();
            lock (_outboundLock)
            {
                _writingMessage = null;
                while (_messages.TryDequeue(out OutboundMessage? dropped))
                {
                    dropped.Dispose();
                }

                _queuedMessages = 0;
                _queuedBytes -= _messageCharge;
                _messageCharge = 0;
            }

            return 0;
        }

        // A Request whose Cancel is queued already sends nothing more: its Cancel ends it.
        bool last = !aborted && message.WriteNextFragment(_output);
        int written = aborted ? 0 : 1;
        lock (_outboundLock)
        {
            _writingMessage = null;
            aborted |= message.Aborted; // Cancelled while this fragment was being written.
            if (last || aborted)
            {
                _queuedMessages--;
                _messageCharge -= message.FragmentSize;
                _queuedBytes -= message.FragmentSize;
            }
            else
            {
                _messages.Enqueue(message);
            }
        }

        if (last || aborted)
        {
            message.Dispose();
            SignalOutboundRoom();
        }

        if (last)
        {
            // All of it is in the output now: whatever is queued from here on goes out after it.
            message.WhenWritten?.OnMessageWritten();
        }

        return written;
    }

    /// <summary>
    /// Before a Cancel is queued, with cancelEndsFragments in force: marks the call's Request, if
    /// it is being sent in fragments and has begun, so that the writer sends no more of it. Marked
    /// first, the Cancel then follows the last fragment written (the writer checks the mark under
    /// the lock before each fragment, and the Cancel is queued after). A Request that has not begun
    /// is sent whole: the peer must see it to answer it, and the caller's side counts the call
    /// until it does.
    /// </summary>
    private void AbortRequestInFragments(uint callId, FrameFlags flags)
    {
        lock (_outboundLock)
        {
            if (_writingMessage is { } writing && writing.IsRequestOf(callId, flags))
            {
                writing.Aborted = true; // Its fragment being written now is its last.
                return;
            }

            foreach (OutboundMessage message in _messages)
            {
                if (message.IsRequestOf(callId, flags))
                {
                    message.Aborted = message.Started;
                    return;
                }
            }
        }
    }

    /// <summary>Sends a frame whose body is raw bytes (Cancel, Ping, Pong, GoAway). A Cancel also
    /// ends its call's Request if that is still being sent in fragments and the peer takes a
    /// Cancel to end one (cancelEndsFragments).</summary>
    internal void SendRawFrame(FrameType type, uint callId, ReadOnlySpan<byte> body, FrameFlags flags = FrameFlags.None)
    {
        ThrowIfClosed();
        if (type == FrameType.Cancel && PeerEndsFragmentsOnCancel && _queuedMessages != 0)
        {
            AbortRequestInFragments(callId, flags);
        }

        PooledBufferWriter staging = t_staging ??= new PooledBufferWriter();
        staging.Reset();
        FrameWriter.WriteRaw(staging, type, callId, body, flags);
        Send(staging);
    }

    /// <summary>
    /// Whether this connection is quiet enough for a caller to write and flush inline. Under load
    /// the answer is no even when the queue happens to be empty for a moment: the frame goes to
    /// the writer loop, which by the time it runs has collected the frames of the other calls in
    /// flight, so they share one flush and one socket send instead of one send each.
    /// </summary>
    private bool IsQuiet => Outgoing.Count + Incoming.Count <= 1;

    private void Send(PooledBufferWriter staging, bool defer = false)
    {
        if (!defer && IsQuiet && _queuedFrames == 0 && TryAcquireWriter())
        {
            // Idle fast path: write our frame and whatever queued meanwhile, then flush ourselves.
            _output.Write(staging.WrittenSpan);
            ReleaseStagingIfOversized(staging);

            int frames = 1 + DrainQueueIntoOutputLocked();
            FlushAndReleaseLocked(frames, handOffRemainingWork: true);
            return;
        }

        // Busy: queue the frame and make sure someone will write it.
        int length = staging.WrittenCount;
        bool handOver = length >= HandOverFrameSize;
        lock (_outboundLock)
        {
            if (handOver)
            {
                _outboundEntries.Add(new OutboundEntry(staging, 0, length));
            }
            else
            {
                AppendCopyLocked(staging.WrittenSpan);
            }

            _queuedFrames++;
            _queuedBytes += length;
        }

        if (handOver)
        {
            // The writer owns it now (it may be writing it already): never touch it again.
            t_staging = TakeSpareStaging();
        }
        else
        {
            ReleaseStagingIfOversized(staging);
        }

        if (defer)
        {
            return; // Its sender calls SendQueuedFrames (or sends another frame) later.
        }

        // A full fence between publishing the frame and looking at the role: paired with the
        // releaser's Interlocked.Exchange, either it sees our frame or we see the role free.
        Interlocked.MemoryBarrier();
        if (TryAcquireWriter())
        {
            ScheduleDrain();
        }
    }

    /// <summary>Sends the frames queued with <c>defer</c>: flushes them here when the connection is
    /// quiet (one write and one flush for the lot), else wakes the writer loop.</summary>
    internal void SendQueuedFrames()
    {
        if (_queuedFrames == 0)
        {
            return; // Written already: a writer that ran meanwhile took them.
        }

        if (IsQuiet && TryAcquireWriter())
        {
            FlushAndReleaseLocked(DrainQueueIntoOutputLocked(), handOffRemainingWork: true);
            return;
        }

        // A full fence between the queued frames and looking at the role: as in Send.
        Interlocked.MemoryBarrier();
        if (TryAcquireWriter())
        {
            ScheduleDrain();
        }
    }

    /// <summary>Copies a small frame into _outbound, extending the last entry when it is the range
    /// just before. Caller holds _outboundLock.</summary>
    private void AppendCopyLocked(ReadOnlySpan<byte> frame)
    {
        int start = _outbound.WrittenCount;
        _outbound.Write(frame);
        Span<OutboundEntry> entries = CollectionsMarshal.AsSpan(_outboundEntries);
        if (entries.Length > 0 && entries[^1].Owned is null && entries[^1].Start + entries[^1].Length == start)
        {
            entries[^1].Length += frame.Length;
        }
        else
        {
            _outboundEntries.Add(new OutboundEntry(null, start, frame.Length));
        }
    }

    private static PooledBufferWriter TakeSpareStaging()
    {
        if (s_spareStaging.TryDequeue(out PooledBufferWriter? spare))
        {
            Interlocked.Decrement(ref s_spareStagingCount);
            return spare;
        }

        return new PooledBufferWriter();
    }

    /// <summary>Keeps a written hand-over buffer for the next thread that needs one, or frees it.</summary>
    private static void ReturnSpareStaging(PooledBufferWriter staging)
    {
        if (staging.Buffer.Length <= MaxSpareStagingSize)
        {
            if (Interlocked.Increment(ref s_spareStagingCount) <= MaxSpareStaging)
            {
                staging.Reset();
                s_spareStaging.Enqueue(staging);
                return;
            }

            Interlocked.Decrement(ref s_spareStagingCount);
        }

        staging.Dispose();
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
        _stages.StartWriter(); // stage clock: a writer turn starts gathering
        if (_queuedFrames == 0)
        {
            return WriteNextFragmentLocked();
        }

        PooledBufferWriter batch;
        List<OutboundEntry> entries;
        int frames;
        lock (_outboundLock)
        {
            batch = _outbound;
            _outbound = _draining;
            entries = _outboundEntries;
            _outboundEntries = _drainingEntries;
            frames = _queuedFrames;
            _queuedFrames = 0;
            _queuedBytes = _messageCharge;
        }

        SignalOutboundRoom();

        bool drop = DropsQueuedFrames;
        if (drop)
        {
            frames = 0;
        }

        ReadOnlySpan<byte> copied = batch.WrittenSpan;
        foreach (OutboundEntry entry in CollectionsMarshal.AsSpan(entries))
        {
            if (entry.Owned is null)
            {
                if (!drop)
                {
                    _output.Write(copied.Slice(entry.Start, entry.Length));
                }
            }
            else
            {
                if (!drop)
                {
                    _output.Write(entry.Owned.WrittenSpan);
                }

                ReturnSpareStaging(entry.Owned);
            }
        }

        entries.Clear();
        _drainingEntries = entries;
        batch.Reset();
        if (batch.Buffer.Length > MaxRetainedOutboundSize)
        {
            batch.Dispose();
            batch = new PooledBufferWriter(4096);
        }

        _draining = batch;
        return frames + WriteNextFragmentLocked();
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

                _stages.StopWriter(); // stage clock: the turn's flush call returned
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

            if ((_queuedFrames == 0 && _queuedMessages == 0) || !TryAcquireWriter())
            {
                return;
            }

            // A large message keeps the writer busy for many turns: between two of its fragments,
            // go to the back of the thread pool's queue, so that the completions of the small
            // calls it interleaves with never wait for the whole transfer to find a thread.
            if (handOffRemainingWork || _queuedMessages > 0)
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
            // Writes what is still queued (graceful close) or drops it, every fragment of every
            // message included; completing the output hands everything written to the transport's
            // send loop.
            do
            {
                DrainQueueIntoOutputLocked();
            }
            while (_queuedMessages > 0);

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
    internal int QueuedOutboundBytes => _queuedBytes;

    private void ThrowIfClosed()
    {
        if (IsClosed)
        {
            throw CreateClosedException();
        }
    }

    [DoesNotReturn]
    private void ThrowMessageTooLarge(FrameType type, int size) =>
        throw new MessageTooLargeException($"The {type} is {size} bytes, over the peer's MaxMessageSize of {PeerMaxMessageSize} bytes ({DescribeSize(PeerMaxMessageSize)}). Send a smaller message, or raise {PeerOptionsName}.MaxMessageSize on the receiving side.");

    /// <summary>"64 MiB", "64 KiB" or "1000 bytes", for messages about sizes.</summary>
    internal static string DescribeSize(long bytes) =>
        bytes % (1024 * 1024) == 0 ? $"{bytes / (1024 * 1024)} MiB" : bytes % 1024 == 0 ? $"{bytes / 1024} KiB" : $"{bytes} bytes";

    [DoesNotReturn]
    private void ThrowFrameTooLarge(FrameType type, int length) =>
        throw new FrameTooLargeException($"The {type} frame is {length} bytes (not counting its 4-byte length prefix), over the peer's maximum frame size of {PeerMaxFrameSize} bytes. Send smaller messages or raise MaxFrameSize on the receiving side.");

    /// <summary>One run of queued frames: a range of the connection's copy buffer, or a whole
    /// handed-over staging buffer (<see cref="Owned"/>).</summary>
    private struct OutboundEntry(PooledBufferWriter? owned, int start, int length)
    {
        public readonly PooledBufferWriter? Owned = owned;
        public readonly int Start = start;
        public int Length = length;
    }
}
