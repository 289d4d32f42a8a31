using System.Diagnostics;

namespace Mux.Connection;

/// <summary>
/// The calls a client may have outstanding on one connection: the server's advertised
/// <c>maxConcurrentCalls</c>, honoured on the client as HTTP/2 clients honour
/// SETTINGS_MAX_CONCURRENT_STREAMS, so the server never has to stop reading. A slot is taken
/// before a request is sent and given back when the server's answer for it arrives.
/// Taking a free slot is one compare-and-swap on one count. A call that finds none waits here as
/// itself, its Request already encoded: its <see cref="PendingCall"/> is linked in through its own
/// fields, oldest first, so waiting allocates nothing and needs no timer (its deadline and its
/// token reach it through the pending table, as a sent call's do). Whoever gives a slot back takes
/// the oldest waiting call with it and sends that call's Request.
/// </summary>
/// <remarks>
/// The server counts the calls it runs with this type too; it never queues one.
/// </remarks>
internal sealed class CallSlots
{
    private readonly Lock _lock = new();

    // The waiting calls, oldest first, linked through PendingCall.QueuePrevious and QueueNext; each
    // in the WaitingForSlot state. Guarded by _lock.
    private PendingCall? _oldest;
    private PendingCall? _newest;

    // Free slots, never negative. Taken with compare-and-swap by takers (and by Release on a
    // waiting call's behalf); given back by Release.
    private int _free;

    // How many calls wait, published so that Release skips the lock when none does. Changed with
    // Interlocked under _lock: the full fence pairs with Release's increment, so either a call that
    // queues (and tries to take after counting itself) sees the freed slot or Release sees the call.
    private int _queued;

    // Set once, under _lock, when the connection can send no more calls: makes the exception each
    // later call that would wait fails with, one of its own (one instance thrown on several threads
    // would have its stack trace overwritten by each).
    private Func<Exception>? _failure;

    public CallSlots(int count) => _free = count;

    /// <summary>Free slots now.</summary>
    public int Free => Volatile.Read(ref _free);

    /// <summary>Calls waiting for a slot now.</summary>
    public int Queued => Volatile.Read(ref _queued);

    /// <summary>Takes a free slot if there is one, without waiting.</summary>
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

    /// <summary>
    /// Queues a call that found no free slot (in the pending table already, its Request encoded).
    /// <see cref="SlotQueueing.SlotTaken"/>: a slot was freed meanwhile and the call holds it,
    /// dequeued, for its caller to send now; <see cref="SlotQueueing.GivenUp"/>: the call was given up
    /// on before it could queue; <see cref="SlotQueueing.Refused"/>: the slots failed, and
    /// <paramref name="refused"/> makes the call's exception.
    /// </summary>
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

    /// <summary>Gives a slot back. When calls wait, the oldest takes it and is returned, dequeued:
    /// the caller sends its Request (or, if it cannot, gives the slot back again).</summary>
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

    /// <summary>Takes a waiting call out of the queue unsent (its caller gave up on it, or its
    /// deadline passed): false when it does not wait (it was dequeued to be sent, or never queued).</summary>
    public bool TryUnlink(PendingCall call)
    {
        // A call leaves the queue once and never comes back; one not queued yet, given up on now,
        // fails to queue (TryMarkWaitingForSlot). So a sent call's cancellation takes no lock.
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

    /// <summary>Fails the slots: no call queues from now on (each is refused with an exception
    /// <paramref name="failure"/> makes). Returns the calls that were waiting, oldest first, each
    /// taken out unsent and chained to the next through <see cref="PendingCall.QueueNext"/>.</summary>
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

/// <summary>How <see cref="CallSlots.Enqueue"/> took a call that found no free slot.</summary>
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
