using System.Buffers;
using System.Runtime.InteropServices;
using Mux.Protocol;

namespace Mux.Connection;

/// <summary>
/// What a connection's senders have queued for its writer role: whole frames, and messages over
/// the fragment size, which go out one fragment per writer turn, round robin, so that the frames
/// of other calls queued meanwhile go out between any two of their fragments. Any thread queues;
/// only the writer role takes from it.
/// </summary>
/// <remarks>
/// <para>
/// Whole frames go to one of a few stripes chosen by call id, each with its own short lock, so
/// senders of different calls rarely meet on a lock or a line (issue 24: one lock taken by every
/// sender was the next limit past 8 cores). One call's frames always go to the same stripe, in the
/// order they were queued, which is the only order the protocol asks for: frames of different
/// calls interleave freely (docs/protocol.md), and a connection's own frames (call id 0: Ping,
/// Pong, GoAway) share stripe 0. Striping by core instead would keep each sender's lines on its
/// core, but a call's frames come from different threads (a Request, then its Cancel), and a
/// writer that takes the stripes one after the other could take a later frame before an earlier one.
/// The writer takes every stripe whole, one after the other, and writes them in one flush.
/// </para>
/// <para>
/// A small frame is copied into a byte buffer the stripe owns, double-buffered with the one the
/// writer is writing, so queueing it is one short lock and one copy, and allocates nothing (a
/// buffer, or a rented array, per queued frame ran the array pool dry with hundreds queued). A
/// large frame is not copied under the lock: its staging buffer itself is taken over
/// (<see cref="StagingBuffers"/>), so the lock is held for a pointer store, whatever the size.
/// </para>
/// </remarks>
internal sealed class OutboundQueue
{
    // A drained buffer that grew past this (a burst of large frames) is replaced by a small one.
    // 500 callers' 5.4 KB answers queue 2.7 MB at once: at 1 MiB every such burst regrew the
    // buffer through new 1, 2 and 4 MiB arrays (93 % of the server's bytes in a list100 profile).
    private const int MaxRetainedBufferSize = 4 * 1024 * 1024;

    // Frames at least this large are taken over in their staging buffer rather than copied: copying
    // 5.4 KB list100 answers under the lock kept a loaded server's senders spinning on it (13-27 %
    // of its running samples at 500 callers); a small frame's copy costs about what a hand-over does.
    private const int HandOverFrameSize = 1024;

    // Stripes: one per core up to this many. Whoever sums them (the writer once per turn; the
    // outbound limit only once a stripe has reached its share, see _mayBeFull) reads one line per
    // stripe, so more stripes than it takes to make a meeting on one lock rare would cost more
    // than they save.
    private const int MaxStripes = 8;

    private readonly Stripe[] _stripes;
    private readonly uint _stripeMask;

    // Guards the messages in fragments (_messages, _writingMessage, _messageCharge, _messageCount):
    // taken per message and per fragment, never per small frame.
    private readonly Lock _lock = new();

    // Messages in fragments, the writer taking the head and putting it back at the tail. Senders
    // enqueue under _lock.
    private readonly Queue<OutboundMessage> _messages = new();

    // Messages not yet completely written, including one the writer has taken out of _messages to
    // write a fragment of. Written under _lock; read without it as a hint.
    private volatile int _messageCount;

    // The message the writer has taken out of _messages to write a fragment of, so that a Cancel
    // can still reach it (AbortRequest). Set and cleared under _lock.
    private OutboundMessage? _writingMessage;

    // What the queued messages count against the outbound limit: one fragment each, not their whole
    // size, so that a transfer under way never makes the queue look full to small calls; a peer that
    // stops reading still fills it after a few messages. Written under _lock; read without it.
    private volatile int _messageCharge;

    // The outbound limit, and the share of it that some stripe (or the messages' charge) must
    // reach before the queue as a whole can reach it (pigeonhole: limit / (stripes + 1)).
    private int _limit = int.MaxValue;
    private int _shareOfLimit = int.MaxValue;

    // Set by whoever takes a stripe or the messages' charge to its share of the limit; cleared by
    // the writer as it takes the stripes. False means the queue is under the limit, so the check
    // made once per call reads this one line (written rarely) instead of every stripe's.
    private volatile bool _mayBeFull;

    public OutboundQueue()
    {
        int stripes = (int)Math.Min(MaxStripes, System.Numerics.BitOperations.RoundUpToPowerOf2((uint)Environment.ProcessorCount));
        _stripes = new Stripe[stripes];
        for (int i = 0; i < stripes; i++)
        {
            _stripes[i] = new Stripe();
        }

        _stripeMask = (uint)stripes - 1;
    }

    /// <summary>Frames queued now (a hint: read without the locks, one line per stripe).</summary>
    public int QueuedFrames
    {
        get
        {
            int frames = 0;
            foreach (Stripe stripe in _stripes)
            {
                frames += stripe.Frames;
            }

            return frames;
        }
    }

    /// <summary>Bytes queued now, a message in fragments counting for one fragment (a hint).</summary>
    public int QueuedBytes
    {
        get
        {
            int bytes = _messageCharge;
            foreach (Stripe stripe in _stripes)
            {
                bytes += stripe.Bytes;
            }

            return bytes;
        }
    }

    /// <summary>Messages not yet completely written (a hint).</summary>
    public int QueuedMessages => _messageCount;

    /// <summary>How many bytes may be queued before <see cref="IsFull"/> says so. Set once, before
    /// the queue is used.</summary>
    public int Limit
    {
        get => _limit;
        set
        {
            _limit = value;
            _shareOfLimit = Math.Max(1, value / (_stripes.Length + 1));
        }
    }

    /// <summary>Whether <see cref="QueuedBytes"/> has reached <see cref="Limit"/> (a hint, as
    /// QueuedBytes is). Reads the stripes only once one of them has reached its share.</summary>
    public bool IsFull => _mayBeFull && QueuedBytes >= _limit;

    /// <summary>Queues an encoded frame of call <paramref name="callId"/> (0: the connection's
    /// own). Returns true when its staging buffer was taken over: the writer owns it now (it may be
    /// writing it already), so the sender must never touch it again.</summary>
    public bool Enqueue(PooledBufferWriter staging, uint callId)
    {
        int length = staging.WrittenCount;
        bool takeOver = length >= HandOverFrameSize;
        Stripe stripe = _stripes[callId & _stripeMask];
        lock (stripe.Lock)
        {
            if (takeOver)
            {
                stripe.Entries.Add(new OutboundEntry(staging, 0, length));
            }
            else
            {
                stripe.AppendCopyLocked(staging.WrittenSpan);
            }

            stripe.Frames++;
            stripe.Bytes += length;
            if (stripe.Bytes >= _shareOfLimit && !_mayBeFull)
            {
                _mayBeFull = true;
            }
        }

        return takeOver;
    }

    /// <summary>Queues a message to be sent in fragments.</summary>
    public void EnqueueMessage(OutboundMessage message)
    {
        lock (_lock)
        {
            _messages.Enqueue(message);
            _messageCount++;
            _messageCharge += message.FragmentSize;
            if (_messageCharge >= _shareOfLimit)
            {
                _mayBeFull = true;
            }
        }
    }

    /// <summary>
    /// Writes every queued frame into <paramref name="output"/>, stripe after stripe, or drops them
    /// (<paramref name="drop"/>: the connection closed), and returns the frames written. Writer
    /// role only.
    /// </summary>
    public int WriteFrames(IBufferWriter<byte> output, bool drop)
    {
        // Cleared before the stripes are taken: a stripe that reaches its share after its take
        // sets it again; the messages' charge is not taken here, so it is looked at again.
        _mayBeFull = false;
        if (_messageCharge >= _shareOfLimit)
        {
            _mayBeFull = true;
        }

        int frames = 0;
        foreach (Stripe stripe in _stripes)
        {
            if (stripe.Frames != 0)
            {
                frames += stripe.WriteLocked(output, drop);
            }
        }

        return drop ? 0 : frames;
    }

    /// <summary>
    /// Writes one fragment of the message at the head of the queue into <paramref name="output"/>
    /// and puts it back at the tail unless that was its last, or drops every message
    /// (<paramref name="drop"/>). Returns the frames written; <paramref name="finished"/> says a
    /// message left the queue (room for more). Writer role only.
    /// </summary>
    public int WriteNextFragment(IBufferWriter<byte> output, bool drop, out bool finished)
    {
        finished = false;
        if (_messageCount == 0)
        {
            return 0;
        }

        OutboundMessage message;
        bool aborted;
        lock (_lock)
        {
            message = _messages.Dequeue();
            _writingMessage = message;
            aborted = message.Aborted;
        }

        if (drop)
        {
            message.Dispose();
            lock (_lock)
            {
                _writingMessage = null;
                while (_messages.TryDequeue(out OutboundMessage? dropped))
                {
                    dropped.Dispose();
                }

                _messageCount = 0;
                _messageCharge = 0;
            }

            return 0;
        }

        // A Request whose Cancel is queued already sends nothing more: its Cancel ends it.
        bool last = !aborted && message.WriteNextFragment(output);
        lock (_lock)
        {
            _writingMessage = null;
            finished = last || message.Aborted; // Aborted also while this fragment was being written.
            if (finished)
            {
                _messageCount--;
                _messageCharge -= message.FragmentSize;
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

        return aborted ? 0 : 1;
    }

    /// <summary>
    /// Before a Cancel is queued, with cancelEndsFragments in force: marks the call's Request, if it
    /// is being sent in fragments and has begun, so that the writer sends no more of it. Marked
    /// first, the Cancel then follows the last fragment written (the writer checks the mark under
    /// the lock before each fragment, and the Cancel is queued after). A Request that has not begun
    /// is sent whole: the peer must see it to answer it, and the caller's side counts the call
    /// until it does.
    /// </summary>
    public void AbortRequest(uint callId, FrameFlags idSpace)
    {
        lock (_lock)
        {
            if (_writingMessage is { } writing && writing.IsRequestOf(callId, idSpace))
            {
                writing.Aborted = true; // Its fragment being written now is its last.
                return;
            }

            foreach (OutboundMessage message in _messages)
            {
                if (message.IsRequestOf(callId, idSpace))
                {
                    message.Aborted = message.Started;
                    return;
                }
            }
        }
    }

    /// <summary>
    /// One stripe's frames, in the order they were queued. It ends in a pad, and its lock and
    /// lists are allocated right after it (the first field initializer is the lock), so no two
    /// stripes share a cache line (the GC keeps live objects in their order when it compacts).
    /// A <see cref="System.Threading.Lock"/>, not a Monitor on the stripe object: with a Monitor a
    /// lone sender's frames/s read 6.6M, 9.1M and 14.6M in three rounds of the engine suite, with a
    /// Lock 13.0-14.0M (likely the Monitor's sync block, which it keeps once the writer and a
    /// sender have met on it).
    /// </summary>
    private sealed class Stripe
    {
        // Taken by the stripe's senders per frame and by the writer per turn.
        public readonly Lock Lock = new();

        // What is queued, in order: ranges of Buffer (Owned null; consecutive copies share one)
        // and taken-over staging buffers. Appended under the stripe's lock; swapped with
        // _writingEntries by the writer under it.
        public List<OutboundEntry> Entries = [];

        // Frames queued, and their bytes. Written under the lock; read without it as hints.
        public volatile int Frames;
        public volatile int Bytes;

        // The entries the writer is writing; only it touches them.
        private List<OutboundEntry> _writingEntries = [];

        // Small frames waiting for the writer, back to back. Appended under the lock; swapped with
        // _writingBuffer by the writer under it.
        private PooledBufferWriter _buffer = new(4096);

        // The buffer the writer copies into the pipe while senders fill _buffer. Only the writer
        // touches it.
        private PooledBufferWriter _writingBuffer = new(4096);

#pragma warning disable CS0169, IDE0051 // Never read: it only keeps the next stripe off this one's lines.
        private CacheLinePad _pad;
#pragma warning restore CS0169, IDE0051

        /// <summary>Copies a small frame into the buffer, extending the last entry when it is the
        /// range just before. Caller holds the stripe's lock.</summary>
        public void AppendCopyLocked(ReadOnlySpan<byte> frame)
        {
            int start = _buffer.WrittenCount;
            _buffer.Write(frame);
            Span<OutboundEntry> entries = CollectionsMarshal.AsSpan(Entries);
            if (entries.Length > 0 && entries[^1].Owned is null && entries[^1].Start + entries[^1].Length == start)
            {
                entries[^1].Length += frame.Length;
            }
            else
            {
                Entries.Add(new OutboundEntry(null, start, frame.Length));
            }
        }

        /// <summary>Takes what is queued (under the lock) and writes it into
        /// <paramref name="output"/>, or drops it. Returns the frames taken. Writer role only.</summary>
        public int WriteLocked(IBufferWriter<byte> output, bool drop)
        {
            PooledBufferWriter batch;
            List<OutboundEntry> entries;
            int frames;
            lock (Lock)
            {
                batch = _buffer;
                _buffer = _writingBuffer;
                entries = Entries;
                Entries = _writingEntries;
                frames = Frames;
                Frames = 0;
                Bytes = 0;
            }

            ReadOnlySpan<byte> copied = batch.WrittenSpan;
            foreach (OutboundEntry entry in CollectionsMarshal.AsSpan(entries))
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

            entries.Clear();
            _writingEntries = entries;
            batch.Reset();
            if (batch.Buffer.Length > MaxRetainedBufferSize)
            {
                batch.Dispose();
                batch = new PooledBufferWriter(4096);
            }

            _writingBuffer = batch;
            return frames;
        }
    }

    /// <summary>64 bytes that keep what follows off the line of what precedes.</summary>
    [StructLayout(LayoutKind.Sequential, Size = 64)]
    private struct CacheLinePad
    {
        private readonly long _unused;
    }

    /// <summary>One run of queued frames: a range of the copy buffer, or a whole taken-over
    /// staging buffer (<see cref="Owned"/>).</summary>
    private struct OutboundEntry(PooledBufferWriter? owned, int start, int length)
    {
        public readonly PooledBufferWriter? Owned = owned;
        public readonly int Start = start;
        public int Length = length;
    }
}
