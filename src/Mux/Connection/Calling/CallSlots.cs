namespace Mux.Connection;

/// <summary>
/// The calls a client may have outstanding on one connection: the server's advertised
/// <c>maxConcurrentCalls</c>, honoured on the client as HTTP/2 clients honour
/// SETTINGS_MAX_CONCURRENT_STREAMS, so the server never has to stop reading. A slot is taken
/// before a request is sent and given back when the server's answer for it arrives.
/// Taking a free slot is one compare-and-swap on one count; only callers that find none take the
/// lock and wait (asynchronously, cancellably, within their deadline), oldest first.
/// </summary>
internal sealed class CallSlots
{
    private readonly Lock _lock = new();

    // Callers waiting for a slot, oldest first. Guarded by _lock.
    private readonly LinkedList<Waiter> _waiters = new();

    // Free slots, never negative. Taken with compare-and-swap by takers (and by Release on a
    // waiter's behalf); given back by Release.
    private int _free;

    // _waiters.Count, published so that Release skips the lock when nobody waits. Changed with
    // Interlocked under _lock: the full fence pairs with Release's increment, so either a new
    // waiter (which tries to take after it) sees the freed slot or Release sees the waiter.
    private int _waiterCount;

    // Set once, under _lock, when the connection can send no more calls: makes the exception each
    // later waiter fails with, one of its own (one instance thrown on several threads would have
    // its stack trace overwritten by each).
    private Func<Exception>? _failure;

    public CallSlots(int count) => _free = count;

    /// <summary>Free slots now.</summary>
    public int Free => Volatile.Read(ref _free);

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

    /// <summary>Waits for a slot, oldest waiter first, at most <paramref name="timeout"/> by
    /// <paramref name="clock"/> (the client's TimeProvider).</summary>
    /// <exception cref="TimeoutException"><paramref name="timeout"/> passed first.</exception>
    /// <exception cref="OperationCanceledException"><paramref name="cancellationToken"/> fired first.</exception>
    /// <exception cref="MuxConnectionException">The connection closed or is going away.</exception>
    public async ValueTask WaitAsync(TimeSpan timeout, TimeProvider clock, CancellationToken cancellationToken)
    {
        var waiter = new Waiter();
        lock (_lock)
        {
            if (_failure is not null)
            {
                throw _failure();
            }

            Interlocked.Increment(ref _waiterCount);
            if (TryTake())
            {
                Interlocked.Decrement(ref _waiterCount);
                return;
            }

            waiter.Node = _waiters.AddLast(waiter);
        }

        try
        {
            await waiter.Task.WaitAsync(timeout, clock, cancellationToken).ConfigureAwait(false);
        }
        catch when (!waiter.Task.IsFaulted)
        {
            bool granted;
            lock (_lock)
            {
                if (waiter.Node.List is not null)
                {
                    _waiters.Remove(waiter.Node);
                    Interlocked.Decrement(ref _waiterCount);
                }

                // Off the list, it was granted a slot or failed (Fail takes the waiters off under
                // the lock, and fails them after it): only a granted one has a slot to give back.
                granted = waiter.Granted;
            }

            if (granted)
            {
                Release(); // A slot was granted just as we gave up: pass it on.
            }

            throw;
        }
    }

    /// <summary>Gives a slot back; the oldest waiter, if any, gets it.</summary>
    public void Release()
    {
        Interlocked.Increment(ref _free);
        if (Volatile.Read(ref _waiterCount) == 0)
        {
            return;
        }

        Waiter? granted = null;
        lock (_lock)
        {
            if (_waiters.First is { } oldest && TryTake())
            {
                _waiters.RemoveFirst();
                Interlocked.Decrement(ref _waiterCount);
                granted = oldest.Value;
                granted.Granted = true;
            }
        }

        granted?.TrySetResult();
    }

    /// <summary>Fails every waiter, and every later wait, with an exception <paramref name="failure"/>
    /// makes for each.</summary>
    public void Fail(Func<Exception> failure)
    {
        Waiter[] waiters;
        lock (_lock)
        {
            _failure ??= failure;
            waiters = [.. _waiters];
            _waiters.Clear();
            Interlocked.Exchange(ref _waiterCount, 0);
        }

        foreach (Waiter waiter in waiters)
        {
            waiter.TrySetException(failure());
        }
    }

    /// <summary>One caller waiting for a slot. Its continuation never runs under the lock.</summary>
    private sealed class Waiter() : TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously)
    {
        // Its place in _waiters; detached (List is null) once granted, failed or given up. Guarded by _lock.
        public LinkedListNode<Waiter> Node = null!;

        // Whether Release took a slot for it (and detached it). Guarded by _lock.
        public bool Granted;
    }
}
