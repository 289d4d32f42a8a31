using System.Buffers;
using System.Runtime.InteropServices;
using Mux.Protocol;

namespace Mux.Connection;

/// <summary>
/// Whole frames, and messages over the fragment size, which go out one fragment per writer turn, round robin, so other
/// calls' frames go out between their fragments. Any thread queues under one short lock; only the writer role takes.
/// A message's first fragment follows every frame queued before it, so a call's frames reach the wire in its order.
/// </summary>
/// <remarks>
/// A small frame is copied into a buffer double-buffered with the one the writer is writing, so queueing allocates
/// nothing. A large frame's staging buffer is taken over instead, so the lock is held for a pointer store.
/// </remarks>
internal sealed class OutboundQueue
{
    // A drained buffer that grew past this (a burst of large frames) is replaced by a small one; below it, a burst of a
    // few hundred answers reuses the buffer instead of regrowing it through fresh large arrays.
    private const int MaxRetainedBufferSize = 4 * 1024 * 1024;

    // Frames at least this large are taken over in their staging buffer rather than copied under the lock, where a copy
    // keeps the other senders spinning; a small frame's copy costs about what a hand-over does.
    private const int HandOverFrameSize = 1024;

    private readonly Lock _lock = new();

    // What is queued, in order: ranges of _buffer (Owned null; consecutive copies share one) and taken-over staging
    // buffers. Appended under _lock; swapped with _writingEntries by the writer under the lock.
    private List<OutboundEntry> _entries = [];

    // Small frames waiting for the writer, back to back. Appended under _lock; swapped with _writingBuffer under it.
    private PooledBufferWriter _buffer = new(4096);

    // What the writer is writing, while senders fill the two above; only it touches them.
    private List<OutboundEntry> _writingEntries = [];
    private PooledBufferWriter _writingBuffer = new(4096);

    // The counts below are written under _lock and read without it as hints (the emptiness checks, the outbound limit, the
    // gauge). _bytes counts one fragment for each message in _messages, and _messageCount the message being written too.
    private volatile int _frames;

    private volatile int _bytes;
    private volatile int _messageCount;

    // Messages in fragments, the writer taking the head and putting it back at the tail. Senders enqueue under _lock.
    private readonly Queue<OutboundMessage> _messages = new();

    // The message the writer has taken out of _messages to write a fragment of, so that a Cancel can still reach it
    // (AbortRequest). Set and cleared under _lock.
    private OutboundMessage? _writingMessage;

    // What the queued messages count against the outbound limit: one fragment each, not their whole size, so that a
    // transfer under way never makes the queue look full to small calls; a peer that stops reading still fills it after a
    // few messages. Guarded by _lock.
    private int _messageCharge;

    // Set by Close, after the connection's last writer turn: a message queued later would never be written, nor its
    // segments returned. Guarded by _lock.
    private bool _closed;

    public int QueuedFrames => _frames;

    public int QueuedBytes => _bytes;

    public int QueuedMessages => _messageCount;

    // True when the staging buffer was taken over: the writer owns it now, so the sender must never touch it again.
    public bool Enqueue(PooledBufferWriter staging)
    {
        int length = staging.WrittenCount;
        bool takeOver = length >= HandOverFrameSize;
        lock (_lock)
        {
            if (takeOver)
            {
                _entries.Add(new OutboundEntry(staging, 0, length));
            }
            else
            {
                AppendCopyLocked(staging.WrittenSpan);
            }

            _frames++;
            _bytes += length;
        }

        return takeOver;
    }

    // A frame encoded earlier, whose bytes stay their owner's (a call that waited for a slot): always copied.
    public void EnqueueCopy(ReadOnlySpan<byte> frame)
    {
        lock (_lock)
        {
            AppendCopyLocked(frame);
            _frames++;
            _bytes += frame.Length;
        }
    }

    // Extends the last entry when it is the range just before.
    private void AppendCopyLocked(ReadOnlySpan<byte> frame)
    {
        int start = _buffer.WrittenCount;
        _buffer.Write(frame);
        Span<OutboundEntry> entries = CollectionsMarshal.AsSpan(_entries);
        if (entries.Length > 0 && entries[^1].Owned is null && entries[^1].Start + entries[^1].Length == start)
        {
            entries[^1].Length += frame.Length;
        }
        else
        {
            _entries.Add(new OutboundEntry(null, start, frame.Length));
        }
    }

    // False once the queue is closed: the message is the caller's still.
    public bool EnqueueMessage(OutboundMessage message)
    {
        lock (_lock)
        {
            if (_closed)
            {
                return false;
            }

            _messages.Enqueue(message);
            _messageCount++;
            _messageCharge += message.FragmentSize;
            _bytes += message.FragmentSize;
        }

        return true;
    }

    // After the connection's last writer turn: drops the messages a sender queued as it closed, and refuses any later one.
    public void Close()
    {
        lock (_lock)
        {
            _closed = true;
            DropMessagesLocked();
        }
    }

    // Writes (or, once closed, drops) every queued frame; returns the frames written. Writer role only.
    public int WriteFrames(IBufferWriter<byte> output, bool drop)
    {
        int frames;
        lock (_lock)
        {
            frames = TakeFramesLocked();
        }

        WriteTakenFrames(output, drop);
        return drop ? 0 : frames;
    }

    // Swaps the queue's buffer and entries with the writer's (empty) ones. Caller holds the writer role too.
    private int TakeFramesLocked()
    {
        (_buffer, _writingBuffer) = (_writingBuffer, _buffer);
        (_entries, _writingEntries) = (_writingEntries, _entries);
        int frames = _frames;
        _frames = 0;
        _bytes = _messageCharge;
        return frames;
    }

    // Writes (or drops) what TakeFramesLocked took. Writer role only, outside the lock.
    private void WriteTakenFrames(IBufferWriter<byte> output, bool drop)
    {
        ReadOnlySpan<byte> copied = _writingBuffer.WrittenSpan;
        foreach (OutboundEntry entry in CollectionsMarshal.AsSpan(_writingEntries))
        {
            if (entry.Owned is null)
            {
                if (!drop)
                {
                    output.Write(copied.Slice(entry.Start, entry.Length));
                }
            }
            else
            {
                if (!drop)
                {
                    output.Write(entry.Owned.WrittenSpan);
                }

                StagingBuffers.ReturnSpare(entry.Owned);
            }
        }

        _writingEntries.Clear();
        _writingBuffer.Reset();
        if (_writingBuffer.Buffer.Length > MaxRetainedBufferSize)
        {
            _writingBuffer.Dispose();
            _writingBuffer = new PooledBufferWriter(4096);
        }
    }

    /// <summary>Writes one fragment of the head message and puts it back at the tail unless that was its last. Returns
    /// the frames written; <paramref name="madeRoom"/> says frames were taken or a message left. Writer role only.</summary>
    public int WriteNextFragment(IBufferWriter<byte> output, bool drop, out bool madeRoom)
    {
        madeRoom = false;
        if (_messageCount == 0)
        {
            return 0;
        }

        OutboundMessage message;
        bool aborted, cancel, finished;
        int frames = 0;
        lock (_lock)
        {
            if (drop)
            {
                DropMessagesLocked();
                return 0;
            }

            message = _messages.Dequeue();

            // Its call may have queued frames just before it, after this turn took the frames (the last items of a stream
            // that then fails with a long Error). Taken under the lock that dequeues it, every frame queued before it goes
            // out before its first fragment; a message already begun had that done before its first fragment.
            if (_frames != 0 && !message.Started)
            {
                frames = TakeFramesLocked();
            }

            _writingMessage = message;
            aborted = message.Aborted;
            cancel = message.CancelAfterFirstFragment;
        }

        if (frames != 0)
        {
            WriteTakenFrames(output, drop: false);
            madeRoom = true;
        }

        // A Request whose Cancel is queued already sends nothing more: its Cancel ends it.
        bool last = !aborted && message.WriteNextFragment(output);
        if (cancel)
        {
            // Cancelled before it began: its first fragment is out, so its Cancel may follow now.
            message.WriteCancel(output);
        }

        lock (_lock)
        {
            _writingMessage = null;
            message.CancelAfterFirstFragment = false;

            // Aborted also while this fragment was being written.
            finished = last || message.Aborted || (cancel && message.CancelEndsIt);
            madeRoom |= finished;
            if (finished)
            {
                _messageCount--;
                _messageCharge -= message.FragmentSize;
                _bytes -= message.FragmentSize;
            }
            else
            {
                _messages.Enqueue(message);
            }
        }

        if (finished)
        {
            message.Dispose();
        }

        if (last)
        {
            // All of it is in the output now: whatever is queued from here on goes out after it.
            message.WhenWritten?.OnMessageWritten();
        }

        return frames + (aborted ? 0 : 1) + (cancel ? 1 : 0);
    }

    // Caller holds the writer role, or is the close that ended it: no message is being written.
    private void DropMessagesLocked()
    {
        while (_messages.TryDequeue(out OutboundMessage? dropped))
        {
            dropped.Dispose();
        }

        _messageCount = 0;
        _bytes -= _messageCharge;
        _messageCharge = 0;
    }

    /// <summary>
    /// A Request in fragments that has not begun takes the Cancel itself (returns true), written right after its first
    /// fragment, since the peer drops a Cancel for a call it has not seen. One that has begun is marked so the writer,
    /// which checks under the lock before each fragment, sends no more; the Cancel queued after follows its last fragment.
    /// </summary>

    public bool AbortRequest(uint callId, FrameFlags idSpace, bool endsFragments)
    {
        lock (_lock)
        {
            if (_writingMessage is { } writing && writing.IsRequestOf(callId, idSpace))
            {
                // Its fragment being written now is its last; the Cancel queued after follows it.
                writing.Aborted |= endsFragments;
                return false;
            }

            foreach (OutboundMessage message in _messages)
            {
                if (message.IsRequestOf(callId, idSpace))
                {
                    if (!message.Started)
                    {
                        message.CancelAfterFirstFragment = true;
                        message.CancelEndsIt = endsFragments;
                        return true;
                    }

                    message.Aborted |= endsFragments;
                    return false;
                }
            }
        }

        return false;
    }

    // A range of the copy buffer, or a whole taken-over staging buffer.
    private struct OutboundEntry(PooledBufferWriter? owned, int start, int length)
    {
        public readonly PooledBufferWriter? Owned = owned;
        public readonly int Start = start;
        public int Length = length;
    }
}
