using System.Diagnostics;
using System.Numerics;
using System.Runtime.CompilerServices;

namespace Mux.Connection;

/// <summary>What a <see cref="CallTable{TCall}"/> keeps: a call known by its id on its connection.</summary>
internal interface ICallTableEntry
{
    /// <summary>The call's id; set before the call is added and unchanged while it is in a table.</summary>
    uint CallId { get; }
}

/// <summary>What a remover leaves in a slot while it judges the call it took out (see <see cref="CallTable{TCall}"/>).
/// Its id never maps to the slot it is put in, so the id check every lookup makes never takes it for a call.</summary>
internal sealed class CallTableMark : ICallTableEntry
{
    // Elsewhere (id 0, slot 0's id) marks every slot but 0; InSlotZero (id 1, slot 1's id) marks slot 0. A table has at
    // least 64 slots, so neither id is its own slot's.
    private static readonly CallTableMark Elsewhere = new(0);
    private static readonly CallTableMark InSlotZero = new(1);

    private CallTableMark(uint callId) => CallId = callId;

    public uint CallId { get; }

    public static CallTableMark For(uint index) => index == 0 ? InSlotZero : Elsewhere;
}

/// <summary>
/// The calls of one role of one connection by call id: the caller role's pending calls (added by callers, removed by
/// whoever completes them) and the serving role's running calls (added by the reader loop, removed by their finishers).
/// </summary>
/// <remarks>
/// A call sits in the slot its id maps to (<c>id &amp; mask</c>). Ids in flight are close together, so they rarely share a
/// slot, and add, find and remove are one read and one compare-and-swap, with no lock: every call passes here twice on
/// each side, and a dictionary under a lock was measurably slower end to end (docs/benchmarks.md). A call whose slot
/// is taken goes to a small dictionary under a lock; only lookups of a slot that has such calls take that lock.
/// <para>
/// Only the thread whose swap took a call out completes it. Call objects are pooled, so a remover checks after its swap
/// that the call still has the id it looked for (it may have been reused for a later id of the same slot meanwhile) and
/// puts back one that fails the check. While it judges, the slot holds a <see cref="CallTableMark"/>, never null: a
/// reused call read as absent would have its answer dropped or be missed by a close. Whoever needs the slot's call
/// waits out a mark, which lasts a few instructions unless the remover is preempted; a remover never waits while it
/// holds one.
/// </para>
/// </remarks>
internal sealed class CallTable<TCall>
    where TCall : class, ICallTableEntry
{
    // Fewer slots make collisions (and the locked path) likelier; more cost memory per connection.
    private const int MinSlots = 64;
    private const int MaxSlots = 16384;

    // Calls at index CallId & _mask. A slot goes from null to a call by compare-and-swap (TryAdd),
    // and from a call to a mark by compare-and-swap (the removers); only the remover whose swap
    // left the mark writes the slot again (null, or the call back). Typed by the interface so a
    // mark fits; only TCalls and marks are ever stored, so an entry that is not a mark is a TCall.
    private readonly ICallTableEntry?[] _slots;
    private readonly int _mask;

    private readonly Lock _overflowLock = new();

    // Calls whose slot was taken by another call when they were added. Guarded by _overflowLock.
    private readonly Dictionary<uint, TCall> _overflow = new();

    // _overflow.Count, written under _overflowLock; read without it by the scans (RemoveWhere).
    private volatile int _overflowCount;

    // Per slot, how many calls whose id maps to it are in _overflow. Written under _overflowLock;
    // read without it by the fast paths, which take the lock only for a slot whose count is not 0.
    // A call is put in the overflow before its id can be seen by anyone looking it up (its Request
    // is sent after it is added), so a look-up that reads 0 here has no call of its own there.
    private readonly int[] _overflowed;

    // Calls in the table; interlocked. Counted before a call is published and uncounted after it is taken out, so a
    // reader (the drain check after GoAway) never reads short of the calls in; each change is a full fence.
    private int _count;

    // Set once by Close; no call is added after it (an adder that raced with it takes its call back).
    private volatile bool _closed;

    /// <param name="expectedCalls">About how many calls are in flight at once (the call cap): the
    /// table has twice as many slots, within 64 and 16,384.</param>
    public CallTable(int expectedCalls)
    {
        int slots = (int)BitOperations.RoundUpToPowerOf2((uint)Math.Clamp(expectedCalls * 2L, MinSlots, MaxSlots));
        _slots = new ICallTableEntry?[slots];
        _overflowed = new int[slots];
        _mask = slots - 1;
    }

    /// <summary>Calls in the table now, or a moment from now: never fewer than are in.</summary>
    public int Count => Volatile.Read(ref _count);

    /// <summary>Adds a call; false when a call with its id is in the table already (a reused id) or
    /// the table is closed (<paramref name="closed"/>).</summary>
    public bool TryAdd(TCall call, out bool closed)
    {
        closed = false;
        if (_closed)
        {
            closed = true;
            return false;
        }

        // Counted before it is published, not after: a scan may take it out (and uncount it) as
        // soon as it is in its slot, and a count read then (the drain check after GoAway) must not
        // come out one short while another call is still waiting. It reads one high instead for the
        // few instructions before the call is in, as if the call were added that much earlier.
        Interlocked.Increment(ref _count);
        uint index = call.CallId & (uint)_mask;
        ref ICallTableEntry? slot = ref _slots[index];
        if ((Volatile.Read(ref _overflowed[index]) != 0 || Interlocked.CompareExchange(ref slot, call, null) is not null)
            && !TryAddSlow(call, ref slot))
        {
            Interlocked.Decrement(ref _count);
            return false;
        }

        // The swap above is a full fence: either Close (which sets _closed, then empties the slots)
        // sees this call, or this sees _closed and takes the call back before anyone completes it.
        if (_closed && TryRemove(call.CallId, call))
        {
            closed = true;
            return false;
        }

        return true;
    }

    private bool TryAddSlow(TCall call, ref ICallTableEntry? slot)
    {
        while (true)
        {
            // A mark may hide a call with this id (put back in a moment): judge the slot once it is gone.
            WaitWhileMarked(ref slot);
            lock (_overflowLock)
            {
                ICallTableEntry? occupant = Volatile.Read(ref slot);
                if (occupant is CallTableMark)
                {
                    continue;
                }

                if ((occupant is not null && occupant.CallId == call.CallId) || _overflow.ContainsKey(call.CallId))
                {
                    return false;
                }

                if (occupant is not null || Interlocked.CompareExchange(ref slot, call, null) is not null)
                {
                    AddToOverflowLocked(call);
                }

                return true;
            }
        }
    }

    /// <summary>Until the remover that left a mark in this slot has written it again.</summary>
    private static void WaitWhileMarked(ref ICallTableEntry? slot)
    {
        SpinWait spin = default;
        while (Volatile.Read(ref slot) is CallTableMark)
        {
            spin.SpinOnce();
        }
    }

    /// <summary>The call with this id, if any. A call found here may be removed at any moment (and,
    /// pooled, reused for another id): a caller that acts on it checks what it needs under the
    /// call's own rules.</summary>
    public TCall? Find(uint callId)
    {
        ref ICallTableEntry? slot = ref _slots[callId & (uint)_mask];
        ICallTableEntry? entry = Volatile.Read(ref slot);
        if (entry is not null && entry.CallId == callId)
        {
            return Unsafe.As<TCall>(entry); // Not a mark: a mark's id never maps to its slot.
        }

        if (entry is CallTableMark)
        {
            // The remover may be putting back the very call we look for: ask again once it has.
            WaitWhileMarked(ref slot);
            return Find(callId);
        }

        if (Volatile.Read(ref _overflowed[callId & (uint)_mask]) == 0)
        {
            return null;
        }

        lock (_overflowLock)
        {
            return _overflow.GetValueOrDefault(callId);
        }
    }

    /// <summary>Removes the call with this id if it is still <paramref name="expected"/>.</summary>
    public bool TryRemove(uint callId, TCall expected) => Remove(callId, expected) is not null;

    /// <summary>Removes and returns the call with this id, if any.</summary>
    public TCall? TryRemove(uint callId) => Remove(callId, expected: null);

    private TCall? Remove(uint callId, TCall? expected)
    {
        uint index = callId & (uint)_mask;
        ref ICallTableEntry? slot = ref _slots[index];
        while (true)
        {
            ICallTableEntry? entry = Volatile.Read(ref slot);
            if (entry is null || entry.CallId != callId || (expected is not null && !ReferenceEquals(entry, expected)))
            {
                if (entry is CallTableMark)
                {
                    WaitWhileMarked(ref slot); // Maybe a put-back of the call we want to remove.
                    continue;
                }

                break; // Another call, or none: ours may be in the overflow.
            }

            if (!ReferenceEquals(Interlocked.CompareExchange(ref slot, CallTableMark.For(index), entry), entry))
            {
                // Another remover got there first, and may be about to put the call back (a stale
                // one that took out this call, reused under our id): look again, as the scans do.
                continue;
            }

            if (entry.CallId == callId)
            {
                Volatile.Write(ref slot, null);
                Interlocked.Decrement(ref _count);
                return Unsafe.As<TCall>(entry);
            }

            // Finished and reused for another id of this slot meanwhile: not ours. Back where
            // lookups of its new id, which waited on the mark, find it.
            Volatile.Write(ref slot, entry);
            break;
        }

        // Not in the slot: it may be in the overflow.
        return TryRemoveOverflow(callId, expected);
    }

    private TCall? TryRemoveOverflow(uint callId, TCall? expected)
    {
        if (Volatile.Read(ref _overflowed[callId & (uint)_mask]) == 0)
        {
            return null;
        }

        lock (_overflowLock)
        {
            if (!_overflow.TryGetValue(callId, out TCall? call) || (expected is not null && !ReferenceEquals(call, expected)))
            {
                return null;
            }

            RemoveFromOverflowLocked(callId);
            Interlocked.Decrement(ref _count);
            return call;
        }
    }

    /// <summary>Removes every call <paramref name="match"/> selects into <paramref name="removed"/>
    /// (created when there is one; each taken by compare-and-swap, so a call another thread removes meanwhile is not also
    /// taken here). For the rare scans: expiry, GoAway. <paramref name="match"/> is asked again about
    /// a call once it is out, while its slot holds a mark: that second ask must not wait on this table.</summary>
    public void RemoveWhere<TState>(TState state, Func<TCall, TState, bool> match, ref List<TCall>? removed)
    {
        for (uint index = 0; index < _slots.Length; index++)
        {
            ref ICallTableEntry? slot = ref _slots[index];
            while (true)
            {
                // A marked slot's call may be put back: wait to see it. A lost swap means another
                // remover (or a new call) got there first: look again, for a remover may put back.
                WaitWhileMarked(ref slot);
                ICallTableEntry? entry = Volatile.Read(ref slot);
                if (entry is CallTableMark)
                {
                    continue;
                }

                if (entry is null || !match(Unsafe.As<TCall>(entry), state))
                {
                    break;
                }

                if (!ReferenceEquals(Interlocked.CompareExchange(ref slot, CallTableMark.For(index), entry), entry))
                {
                    continue;
                }

                // Asked again now that the call is out and nobody else can take it: between the look and
                // the swap it may have completed and been reused for a later call of this slot, which
                // the first answer was not about (an expiry scan failed such a call, time left or not).
                TCall call = Unsafe.As<TCall>(entry);
                if (!match(call, state))
                {
                    Volatile.Write(ref slot, entry);
                    break;
                }

                Volatile.Write(ref slot, null);
                Interlocked.Decrement(ref _count);
                (removed ??= []).Add(call);
                break;
            }
        }

        if (_overflowCount == 0)
        {
            return;
        }

        lock (_overflowLock)
        {
            int before = removed?.Count ?? 0;
            foreach (TCall call in _overflow.Values)
            {
                if (match(call, state))
                {
                    (removed ??= []).Add(call);
                }
            }

            if (removed is null)
            {
                return;
            }

            for (int i = before; i < removed.Count; i++)
            {
                RemoveFromOverflowLocked(removed[i].CallId);
                Interlocked.Decrement(ref _count);
            }
        }
    }

    private void AddToOverflowLocked(TCall call)
    {
        Debug.Assert(_overflowLock.IsHeldByCurrentThread);
        _overflow.Add(call.CallId, call);
        _overflowed[call.CallId & (uint)_mask]++;
        _overflowCount = _overflow.Count;
    }

    private void RemoveFromOverflowLocked(uint callId)
    {
        Debug.Assert(_overflowLock.IsHeldByCurrentThread);
        bool removed = _overflow.Remove(callId);
        Debug.Assert(removed);
        _overflowed[callId & (uint)_mask]--;
        _overflowCount = _overflow.Count;
    }

    /// <summary>Closes the table (no call is added after this) and moves every call into <paramref name="removed"/>.</summary>
    public void Close(List<TCall> removed)
    {
        _closed = true;
        Interlocked.MemoryBarrier(); // Pairs with TryAdd's swap: see there.
        List<TCall>? all = removed;
        RemoveWhere(0, static (_, _) => true, ref all);
    }

    /// <summary>Every call in the table at this moment (for a close, which cancels them all).</summary>
    public List<TCall> Snapshot()
    {
        var calls = new List<TCall>();
        foreach (ref ICallTableEntry? slot in _slots.AsSpan())
        {
            // A marked slot's call is being judged: wait for the verdict (a call put back is still in).
            ICallTableEntry? entry;
            do
            {
                WaitWhileMarked(ref slot);
                entry = Volatile.Read(ref slot);
            }
            while (entry is CallTableMark);

            if (entry is not null)
            {
                calls.Add(Unsafe.As<TCall>(entry));
            }
        }

        lock (_overflowLock)
        {
            calls.AddRange(_overflow.Values);
        }

        return calls;
    }
}
