using System.Diagnostics;
using System.Numerics;

namespace Mux.Connection;

/// <summary>
/// The calls running on one server connection, by call id, for Cancel frames and for cancelling
/// everything on close. Adding and removing take no lock in steady state: a call sits in the slot
/// its id maps to (ids are handed out in sequence by the client, so running calls rarely share a
/// slot), and only a call whose slot is already taken goes to a small locked dictionary.
/// Calls are added only by the connection's reader loop (one thread at a time), and removed by the
/// thread that finishes them; that single adder is what makes the lock-free path correct.
/// </summary>
internal sealed class IncomingCallTable
{
    // Fewer slots make collisions (and the locked path) likelier; more cost memory per connection.
    private const int MinSlots = 16;
    private const int MaxSlots = 4096;

    // Running calls at index CallId & _mask. A slot goes from null to a call only on the reader
    // loop (TryAdd), and from that call back to null only through Remove by its finisher.
    private readonly IncomingCall?[] _slots;
    private readonly int _mask;

    private readonly Lock _overflowLock = new();

    // Running calls whose slot was taken by another running call when they arrived. Guarded by
    // _overflowLock.
    private readonly Dictionary<uint, IncomingCall> _overflow = new();

    // _overflow.Count, written under _overflowLock and read without it by the reader loop: since
    // only the reader loop adds, a 0 it reads stays 0 until it adds again itself.
    private volatile int _overflowCount;

    // Calls in the table. Changed with Interlocked (a full fence, which the drain check relies on).
    private int _count;

    public IncomingCallTable(int maxConcurrentCalls)
    {
        // Twice the cap, so that even a full connection finds most slots free.
        int slots = (int)BitOperations.RoundUpToPowerOf2((uint)Math.Clamp(maxConcurrentCalls * 2L, MinSlots, MaxSlots));
        _slots = new IncomingCall?[slots];
        _mask = slots - 1;
    }

    /// <summary>Calls running now.</summary>
    public int Count => Volatile.Read(ref _count);

    /// <summary>Adds a call; false when a call with its id is still running (a protocol violation).
    /// Reader loop only.</summary>
    public bool TryAdd(IncomingCall call)
    {
        ref IncomingCall? slot = ref _slots[call.CallId & (uint)_mask];
        if (_overflowCount == 0 && Volatile.Read(ref slot) is null)
        {
            // No other adder exists and removers only clear their own call: the slot stays free
            // until this write, and with no overflow the id cannot be running anywhere else.
            Interlocked.Increment(ref _count);
            Volatile.Write(ref slot, call);
            return true;
        }

        return TryAddSlow(call, ref slot);
    }

    private bool TryAddSlow(IncomingCall call, ref IncomingCall? slot)
    {
        lock (_overflowLock)
        {
            IncomingCall? occupant = Volatile.Read(ref slot);
            if ((occupant is not null && occupant.CallId == call.CallId) || _overflow.ContainsKey(call.CallId))
            {
                return false;
            }

            Interlocked.Increment(ref _count);
            if (occupant is null)
            {
                Volatile.Write(ref slot, call);
            }
            else
            {
                _overflow.Add(call.CallId, call);
                _overflowCount = _overflow.Count;
            }

            return true;
        }
    }

    /// <summary>Removes a call that is in the table; returns the number of calls left.</summary>
    public int Remove(IncomingCall call)
    {
        ref IncomingCall? slot = ref _slots[call.CallId & (uint)_mask];
        if (!ReferenceEquals(Interlocked.CompareExchange(ref slot, null, call), call))
        {
            lock (_overflowLock)
            {
                bool removed = _overflow.Remove(call.CallId);
                Debug.Assert(removed, "A call is removed once, by its finisher.");
                _overflowCount = _overflow.Count;
            }
        }

        return Interlocked.Decrement(ref _count);
    }

    /// <summary>The running call with this id, if any. A call found here may finish at any moment;
    /// it cannot be reused for another call before the reader loop (the caller) adds again.</summary>
    public IncomingCall? Find(uint callId)
    {
        IncomingCall? call = Volatile.Read(ref _slots[callId & (uint)_mask]);
        if (call is not null && call.CallId == callId)
        {
            return call;
        }

        if (_overflowCount == 0)
        {
            return null;
        }

        lock (_overflowLock)
        {
            return _overflow.GetValueOrDefault(callId);
        }
    }

    /// <summary>Every call running at this moment (for the close, which cancels them all).</summary>
    public List<IncomingCall> Snapshot()
    {
        var running = new List<IncomingCall>();
        foreach (ref IncomingCall? slot in _slots.AsSpan())
        {
            IncomingCall? call = Volatile.Read(ref slot);
            if (call is not null)
            {
                running.Add(call);
            }
        }

        lock (_overflowLock)
        {
            running.AddRange(_overflow.Values);
        }

        return running;
    }
}
