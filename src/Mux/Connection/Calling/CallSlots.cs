using System.Diagnostics;

namespace Mux.Connection;

/// <summary>The peer's <c>maxConcurrentCalls</c>, honoured as HTTP/2 clients honour SETTINGS_MAX_CONCURRENT_STREAMS, so the peer
/// never has to stop reading. A call that finds no slot waits as itself, linked through its own fields, oldest first, so waiting
/// allocates nothing and needs no timer (its deadline and token reach it through the pending table). Whoever gives a slot back
/// sends the oldest waiting call. The server counts the calls it runs with this type too; it never queues one.</summary>
internal sealed class CallSlots
{
    private readonly Lock _lock = new();

    // Oldest first, linked through PendingCall.QueuePrevious and QueueNext, each WaitingForSlot. Guarded by _lock.
    private PendingCall? _oldest;
    private PendingCall? _newest;

    // Never negative: taken by compare-and-swap (by Release too, for a waiting call), given back by Release.
    private int _free;

    // Published so that Release skips the lock when no call waits. Changed with Interlocked under _lock: the full fence pairs with
    // Release's increment, so either a call that queues (and tries to take after counting itself) sees the freed slot or Release sees it.
    private int _queued;

    // Set once, under _lock, when the connection can send no more calls: makes each later call's exception, one of its own
    // (one instance thrown on several threads would have its stack trace overwritten by each).
    private Func<Exception>? _failure;

    public CallSlots(int count) => _free = count;

    public int Free => Volatile.Read(ref _free);

    public int Queued => Volatile.Read(ref _queued);

    public bool TryTake()
    {
        int seen = Volatile.Read(ref _free);
        while (seen > 0)
        {
            int before = Interlocked.CompareExchange(ref _free, seen - 1, seen);
            if (before == seen)
            {
                return true;
            }

            seen = before;
        }

        return false;
    }

    /// <summary>For a call in the table already, its Request encoded; <paramref name="refused"/> makes a refused call's exception.</summary>
    public SlotQueueing Enqueue(PendingCall call, out Func<Exception>? refused)
    {
        lock (_lock)
        {
            refused = _failure;
            if (refused is not null)
            {
                return SlotQueueing.Refused;
            }

            if (!call.TryMarkWaitingForSlot())
            {
                return SlotQueueing.GivenUp;
            }

            Interlocked.Increment(ref _queued);
            if (TryTake())
            {
                Interlocked.Decrement(ref _queued);
                call.MarkDequeued();
                return SlotQueueing.SlotTaken;
            }

            call.QueuePrevious = _newest;
            if (_newest is null)
            {
                _oldest = call;
            }
            else
            {
                _newest.QueueNext = call;
            }

            _newest = call;
            return SlotQueueing.Queued;
        }
    }

    /// <summary>The oldest waiting call takes the slot and is returned, dequeued, for the caller to send or to pass the slot on.</summary>
    public PendingCall? Release()
    {
        Interlocked.Increment(ref _free);
        if (Volatile.Read(ref _queued) == 0)
        {
            return null;
        }

        lock (_lock)
        {
            PendingCall? oldest = _oldest;
            if (oldest is null || !TryTake())
            {
                return null;
            }

            UnlinkLocked(oldest);
            oldest.MarkDequeued();
            return oldest;
        }
    }

    /// <summary>Takes a call out unsent: false when it does not wait (it was dequeued to be sent, or never queued).</summary>
    public bool TryUnlink(PendingCall call)
    {
        // A call leaves the queue once; one given up on before it queues fails to (TryMarkWaitingForSlot): a sent call's cancellation takes no lock.
        if (!call.IsWaitingForSlot)
        {
            return false;
        }

        lock (_lock)
        {
            if (!call.IsWaitingForSlot)
            {
                return false;
            }

            UnlinkLocked(call);
            call.MarkUnqueued();
            return true;
        }
    }

    /// <summary>The calls that waited, oldest first, each taken out unsent and chained through <see cref="PendingCall.QueueNext"/>.</summary>
    public PendingCall? Fail(Func<Exception> failure)
    {
        lock (_lock)
        {
            _failure ??= failure;
            PendingCall? oldest = _oldest;
            for (PendingCall? call = oldest; call is not null; call = call.QueueNext)
            {
                call.QueuePrevious = null;
                call.MarkUnqueued();
            }

            _oldest = null;
            _newest = null;
            Interlocked.Exchange(ref _queued, 0);
            return oldest;
        }
    }

    private void UnlinkLocked(PendingCall call)
    {
        Debug.Assert(_lock.IsHeldByCurrentThread);
        PendingCall? previous = call.QueuePrevious;
        PendingCall? next = call.QueueNext;
        if (previous is null)
        {
            _oldest = next;
        }
        else
        {
            previous.QueueNext = next;
        }

        if (next is null)
        {
            _newest = previous;
        }
        else
        {
            next.QueuePrevious = previous;
        }

        call.QueuePrevious = null;
        call.QueueNext = null;
        Interlocked.Decrement(ref _queued);
    }
}

internal enum SlotQueueing : byte
{
    /// <summary>It waits; whoever frees a slot sends it.</summary>
    Queued,

    /// <summary>A slot was freed as it came: it holds it, for its caller to send now.</summary>
    SlotTaken,

    /// <summary>It was given up on (its deadline) before it could queue: not queued, already failed.</summary>
    GivenUp,

    /// <summary>The connection sends no more calls: not queued.</summary>
    Refused,
}
