using System.Diagnostics;

namespace Mux.Connection;

/// <summary>
/// The calls of one client connection that are waiting for a response, by call id. Removal is the
/// single point that decides who completes a call: a call is completed only by the thread that
/// removed it. A plain dictionary under a lock: entries are reused, so adding allocates nothing
/// in steady state, and the lock is held for a few dozen nanoseconds.
/// </summary>
internal sealed class PendingCallTable
{
    private readonly Lock _lock = new();

    // Pending calls by id. Guarded by _lock.
    private readonly Dictionary<uint, PendingCall> _calls = new();

    // Set once, under _lock, when the connection closes; no call may be added after it.
    private bool _closed;

    // _calls.Count, published for lock-free reads on the send path. Written under _lock.
    private volatile int _count;

    /// <summary>Calls pending now (read without the lock; exact only at quiet moments).</summary>
    public int Count => _count;

    /// <summary>Adds a call; false if the id is taken (after id wrap-around) or the table is closed.</summary>
    public bool TryAdd(PendingCall call, out bool closed)
    {
        lock (_lock)
        {
            closed = _closed;
            bool added = !_closed && _calls.TryAdd(call.CallId, call);
            _count = _calls.Count;
            return added;
        }
    }

    /// <summary>Removes the call with this id if it is still the given one.</summary>
    public bool TryRemove(uint callId, PendingCall expected)
    {
        lock (_lock)
        {
            if (_calls.TryGetValue(callId, out PendingCall? call) && ReferenceEquals(call, expected))
            {
                _calls.Remove(callId);
                _count = _calls.Count;
                return true;
            }

            return false;
        }
    }

    /// <summary>Whether a call with this id is pending.</summary>
    public bool Contains(uint callId)
    {
        lock (_lock)
        {
            return _calls.ContainsKey(callId);
        }
    }

    /// <summary>Removes and returns the call with this id, if any.</summary>
    public PendingCall? TryRemove(uint callId)
    {
        lock (_lock)
        {
            PendingCall? removed = _calls.Remove(callId, out PendingCall? call) ? call : null;
            _count = _calls.Count;
            return removed;
        }
    }

    /// <summary>Closes the table and moves every call into <paramref name="removed"/>.</summary>
    public void Close(List<PendingCall> removed)
    {
        lock (_lock)
        {
            _closed = true;
            removed.AddRange(_calls.Values);
            _calls.Clear();
            _count = 0;
        }
    }

    /// <summary>Removes calls whose deadline has passed; <paramref name="removed"/> is created only
    /// when there are some (the timer runs every tick, usually finding none).</summary>
    public void RemoveExpired(long now, ref List<PendingCall>? removed)
    {
        lock (_lock)
        {
            foreach (PendingCall call in _calls.Values)
            {
                if (call.Deadline <= now)
                {
                    (removed ??= new List<PendingCall>()).Add(call);
                }
            }

            if (removed is null)
            {
                return;
            }

            foreach (PendingCall call in removed)
            {
                bool wasRemoved = _calls.Remove(call.CallId);
                Debug.Assert(wasRemoved);
            }

            _count = _calls.Count;
        }
    }

    /// <summary>Removes calls with an id above <paramref name="lastServedCallId"/> (a GoAway).</summary>
    public void RemoveAbove(uint lastServedCallId, List<PendingCall> removed)
    {
        lock (_lock)
        {
            foreach (PendingCall call in _calls.Values)
            {
                if (call.CallId > lastServedCallId)
                {
                    removed.Add(call);
                }
            }

            foreach (PendingCall call in removed)
            {
                _calls.Remove(call.CallId);
            }

            _count = _calls.Count;
        }
    }
}
