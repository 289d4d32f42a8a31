using System.Diagnostics;

using Mux.Connection;

namespace Mux.Benchmarks;

/// <summary>
/// The simple alternative to the engine's lock-free <see cref="CallTable{TCall}"/>, kept to compare against
/// (<see cref="CallStructureTableBenchmarks"/>): a dictionary under a lock, with the same members and semantics.
/// </summary>
internal sealed class LockedCallTable<TCall>
    where TCall : class, ICallTableEntry
{
    // Presized up to this many calls; the dictionary grows past it.
    private const int MaxPresized = 1024;

    private const string Reentered = "A match must not call back into the table: it runs under the table's lock.";

    private readonly Lock _lock = new();

    // The calls by id. Guarded by _lock.
    private readonly Dictionary<uint, TCall> _calls;

    // Calls in the table, for readers without the lock (a drain, idle tracking). Interlocked: incremented before a
    // call is published and decremented after it is taken out, so it never reads short of the calls in; each change
    // is a full fence, which the drain checks pair with (IncomingCalls, OutgoingCalls).
    private int _count;

    // Set once by Close; no call is added after it. Guarded by _lock.
    private bool _closed;

    /// <param name="expectedCalls">About how many calls are in flight at once (the call cap).</param>
    public LockedCallTable(int expectedCalls) => _calls = new(Math.Min(expectedCalls, MaxPresized));

    /// <summary>Calls in the table now, or a moment from now: never fewer than are in.</summary>
    public int Count => Volatile.Read(ref _count);

    /// <summary>Adds a call; false when a call with its id is in the table already (a reused id) or
    /// the table is closed (<paramref name="closed"/>).</summary>
    public bool TryAdd(TCall call, out bool closed)
    {
        Debug.Assert(!_lock.IsHeldByCurrentThread, Reentered);

        // Counted before it is published: a remover may take it out (and uncount it) as soon as it is in, and a count
        // read then (the drain check after GoAway) must not come out one short while another call is still in. The
        // increment is also the full fence between the caller's writes before the add and its reads after it.
        Interlocked.Increment(ref _count);
        lock (_lock)
        {
            closed = _closed;
            if (!closed && _calls.TryAdd(call.CallId, call))
            {
                return true;
            }
        }

        Interlocked.Decrement(ref _count);
        return false;
    }

    /// <summary>The call with this id, if any. A call found here may be removed at any moment (and,
    /// pooled, reused for another id): a caller that acts on it checks what it needs under the
    /// call's own rules.</summary>
    public TCall? Find(uint callId)
    {
        Debug.Assert(!_lock.IsHeldByCurrentThread, Reentered);
        lock (_lock)
        {
            return _calls.GetValueOrDefault(callId);
        }
    }

    /// <summary>Removes the call with this id if it is still <paramref name="expected"/>.</summary>
    public bool TryRemove(uint callId, TCall expected)
    {
        Debug.Assert(!_lock.IsHeldByCurrentThread, Reentered);
        lock (_lock)
        {
            if (!_calls.TryGetValue(callId, out TCall? call) || !ReferenceEquals(call, expected))
            {
                return false;
            }

            _calls.Remove(callId);
        }

        Interlocked.Decrement(ref _count);
        return true;
    }

    /// <summary>Removes and returns the call with this id, if any.</summary>
    public TCall? TryRemove(uint callId)
    {
        Debug.Assert(!_lock.IsHeldByCurrentThread, Reentered);
        TCall? call;
        lock (_lock)
        {
            if (!_calls.Remove(callId, out call))
            {
                return null;
            }
        }

        Interlocked.Decrement(ref _count);
        return call;
    }

    /// <summary>Removes every call <paramref name="match"/> selects into <paramref name="removed"/> (created when there
    /// is one). For the rare scans: expiry, GoAway. <paramref name="match"/> runs under the table's lock: it must be
    /// quick and must not call the table (asserted in debug builds).</summary>
    public void RemoveWhere<TState>(TState state, Func<TCall, TState, bool> match, ref List<TCall>? removed)
    {
        Debug.Assert(!_lock.IsHeldByCurrentThread, Reentered);
        int taken = 0;
        lock (_lock)
        {
            foreach ((uint callId, TCall call) in _calls)
            {
                if (match(call, state))
                {
                    _calls.Remove(callId); // Leaves the enumeration valid.
                    (removed ??= []).Add(call);
                    taken++;
                }
            }
        }

        if (taken != 0)
        {
            Interlocked.Add(ref _count, -taken);
        }
    }

    /// <summary>Closes the table (no call is added after this) and moves every call into <paramref name="removed"/>.</summary>
    public void Close(List<TCall> removed)
    {
        Debug.Assert(!_lock.IsHeldByCurrentThread, Reentered);
        int taken;
        lock (_lock)
        {
            _closed = true;
            taken = _calls.Count;
            removed.AddRange(_calls.Values);
            _calls.Clear();
        }

        Interlocked.Add(ref _count, -taken);
    }

    /// <summary>Every call in the table at this moment (for a close, which cancels them all).</summary>
    public List<TCall> Snapshot()
    {
        Debug.Assert(!_lock.IsHeldByCurrentThread, Reentered);
        lock (_lock)
        {
            return new List<TCall>(_calls.Values);
        }
    }
}
