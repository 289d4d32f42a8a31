using System.Buffers;
using System.Diagnostics;
using System.Diagnostics.CodeAnalysis;

namespace Mux.Protocol;

/// <summary>
/// The segments large messages are kept in, on both sides: a message being encoded on its sender's thread
/// (<see cref="MessageBufferWriter"/>) and one arriving in fragments (MessageReassembly).
/// </summary>
/// <remarks>
/// <para>An array of 85,000 bytes or more goes to the large object heap, which only a full collection reclaims, and
/// every full collection pauses every call of the process. A 64 KiB segment stays below that threshold, so even one
/// the pool cannot give is a short-lived small object.</para>
/// <para>ArrayPool.Shared keeps about 32 arrays of a size per core, fewer than a 16 MiB message needs (256 segments),
/// and the rest would live long enough to be promoted. This pool keeps up to <see cref="MaxRetained"/> segments
/// (32 MiB) and, at each full collection, drops those nobody rented since the previous one, so what a burst of large
/// messages kept is released once it ends. Renting and returning take a lock once per 64 KiB: nothing per small call.</para>
/// </remarks>
internal sealed class BufferSegmentPool
{
    /// <summary>65,560 bytes with the array's header, below the large object heap's 85,000.</summary>
    public const int SegmentSize = 64 * 1024;

    /// <summary>At most this many free segments are kept by <see cref="Shared"/> (32 MiB).</summary>
    public const int MaxRetained = 512;

    private readonly Lock _lock = new();

    // The free segments, a stack in _free[0.._count). Under _lock.
    private readonly BufferSegment[] _free;
    private int _count;

    // The smallest _count since the last Trim: segments nobody needed meanwhile. Under _lock.
    private int _lowWater;

    // Segments this pool has created (never decremented), for tests and diagnostics. Interlocked.
    private long _created;

    // Segments rented (oversized ones included) and not yet returned; tests check a message gave back all it took. Interlocked.
    private long _outstanding;

    /// <summary>Keeps up to <paramref name="maxRetained"/> free segments. Only <see cref="Shared"/> trims itself at full
    /// collections.</summary>
    public BufferSegmentPool(int maxRetained)
    {
        ArgumentOutOfRangeException.ThrowIfNegativeOrZero(maxRetained);
        _free = new BufferSegment[maxRetained];
    }

    /// <summary>The pool of every connection in the process.</summary>
    public static BufferSegmentPool Shared { get; } = CreateShared();

    public long Created => Interlocked.Read(ref _created);

    public long Outstanding => Interlocked.Read(ref _outstanding);

    public int FreeCount
    {
        get
        {
            lock (_lock)
            {
                return _count;
            }
        }
    }

    /// <summary>An empty, unlinked segment of <see cref="SegmentSize"/> bytes; for a formatter that asks for more
    /// contiguous room, an oversized one of at least <paramref name="size"/> bytes from ArrayPool.Shared.</summary>
    public BufferSegment Rent(int size = SegmentSize)
    {
        Interlocked.Increment(ref _outstanding);
        if (size > SegmentSize)
        {
            return new BufferSegment(ArrayPool<byte>.Shared.Rent(size));
        }

        lock (_lock)
        {
            if (_count != 0)
            {
                BufferSegment segment = _free[--_count];
                _free[_count] = null!;
                if (_count < _lowWater)
                {
                    _lowWater = _count;
                }

                segment.IsReturned = false;
                return segment;
            }
        }

        Interlocked.Increment(ref _created);
        return new BufferSegment(GC.AllocateUninitializedArray<byte>(SegmentSize));
    }

    /// <summary>Takes back the chain that starts at <paramref name="first"/> (null for none), which the caller must not
    /// use again, and returns the bytes of its arrays (a landed one's included, an external one's not).</summary>
    public long ReturnChain(BufferSegment? first)
    {
        long returned = 0;
        while (first is not null)
        {
            BufferSegment? next = first.NextSegment;
            returned += first.Array.Length;
            Return(first);
            first = next;
        }

        return returned;
    }

    public void Return(BufferSegment segment)
    {
        if (segment.IsExternal || segment.IsLanded)
        {
            return; // Never rented from here: the caller's memory, or the user's array.
        }

        if (segment.IsReturned)
        {
            ThrowReturnedTwice();
        }

        segment.IsReturned = true;
        long outstanding = Interlocked.Decrement(ref _outstanding);
        Debug.Assert(outstanding >= 0, "A segment was returned twice.");
        if (segment.IsOversized)
        {
            ArrayPool<byte>.Shared.Return(segment.Array);
            return; // The segment object goes with its one message.
        }

        segment.Reset();
        lock (_lock)
        {
            if (_count < _free.Length)
            {
                _free[_count++] = segment;
            }

            // Else the pool is full: the segment is dropped.
        }
    }

    // Once per 64 KiB, so Release builds keep it: a segment that two messages hold would corrupt both.
    [DoesNotReturn]
    private static void ThrowReturnedTwice() =>
        throw new InvalidOperationException(
            "A pooled buffer segment was returned twice; its first return gave it to the pool, which may have rented it out again.");

    /// <summary>Drops the free segments that no one rented since the previous trim.</summary>
    internal void Trim()
    {
        lock (_lock)
        {
            int drop = _lowWater;
            for (int i = 0; i < drop; i++)
            {
                _free[--_count] = null!;
            }

            _lowWater = _count;
        }
    }

    private static BufferSegmentPool CreateShared()
    {
        var pool = new BufferSegmentPool(MaxRetained);
        _ = new TrimAtFullCollections(pool);
        return pool;
    }

    /// <summary>
    /// Trims a pool at every full collection: an unreferenced object whose finalizer registers itself again, which, once
    /// in the oldest generation, runs at full collections only (as ArrayPool.Shared trims).
    /// </summary>
    private sealed class TrimAtFullCollections(BufferSegmentPool pool)
    {
        ~TrimAtFullCollections()
        {
            if (Environment.HasShutdownStarted)
            {
                return;
            }

            if (GC.GetGeneration(this) == GC.MaxGeneration)
            {
                pool.Trim();
            }

            GC.ReRegisterForFinalize(this);
        }
    }
}
