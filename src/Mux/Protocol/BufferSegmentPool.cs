using System.Buffers;
using System.Diagnostics;
using System.Diagnostics.CodeAnalysis;

namespace Mux.Protocol;

/// <summary>
/// The segments large messages are kept in, on both sides: a message being encoded on its sender's
/// thread (<see cref="MessageBufferWriter"/>) and one arriving in fragments (MessageReassembly).
/// </summary>
/// <remarks>
/// <para>Why a pool of its own, of 64 KiB arrays. An array of 85,000 bytes or more goes to the
/// large object heap, which only a full (gen2) collection reclaims: a 16 MiB message reassembled
/// into, or encoded into, one array cost a full collection every few messages, and each one paused
/// every call of the process. Pooled large arrays (ArrayPool.Shared) avoid that only while the pool
/// has one to give; it keeps one per size per thread and a few per core, so a message rented on the
/// reader loop's thread and returned on a worker's came back as a fresh 4-32 MiB array now and
/// then. A segment of 64 KiB is below the threshold, so even a segment the pool cannot give is a
/// short-lived small object, never a large one.</para>
/// <para>ArrayPool.Shared keeps at most about 32 arrays of a size per core, fewer than a 16 MiB
/// message needs (256 segments), so the rest would be allocated for every message and dropped
/// after it, living long enough (the tens of milliseconds a message takes) to be promoted. This
/// pool keeps up to <see cref="MaxRetained"/> segments (32 MiB) and gives back, at each full
/// collection, those that nobody rented since the previous one (the smallest number that stayed
/// free), so memory kept for one burst of large messages is released once they stop.</para>
/// <para>Renting and returning take a lock, once per 64 KiB copied: nothing per small call.</para>
/// </remarks>
internal sealed class BufferSegmentPool
{
    /// <summary>The size of a pooled segment's array: 65,560 bytes with its header, below the
    /// large object heap's 85,000.</summary>
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

    // Segments rented (oversized ones included) and not yet returned: by every renter and
    // returner, once per 64 KiB. Read by tests, to see that a message gave back all it took. Interlocked.
    private long _outstanding;

    /// <summary>Creates a pool that keeps up to <paramref name="maxRetained"/> free segments.
    /// Only <see cref="Shared"/> trims itself at full collections.</summary>
    public BufferSegmentPool(int maxRetained)
    {
        ArgumentOutOfRangeException.ThrowIfNegativeOrZero(maxRetained);
        _free = new BufferSegment[maxRetained];
    }

    /// <summary>The pool of every connection in the process.</summary>
    public static BufferSegmentPool Shared { get; } = CreateShared();

    /// <summary>How many segments this pool has created (allocated) so far.</summary>
    public long Created => Interlocked.Read(ref _created);

    /// <summary>How many segments (oversized ones included) are rented and not yet returned.</summary>
    public long Outstanding => Interlocked.Read(ref _outstanding);

    /// <summary>How many free segments this pool holds now.</summary>
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

    /// <summary>An empty segment, unlinked, of <see cref="SegmentSize"/> bytes; or, for a formatter
    /// that asks for more contiguous room than that (a long string, a type of the user's), an
    /// oversized one of at least <paramref name="size"/> bytes, whose array comes from
    /// ArrayPool.Shared and goes back there.</summary>
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

    /// <summary>Takes back every segment of the chain that starts at <paramref name="first"/>
    /// (the caller must not use any of them again), and returns the bytes of their arrays. Null
    /// is nothing to return.</summary>
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

    /// <summary>Takes back one segment (unlinked from whatever chain it was in).</summary>
    public void Return(BufferSegment segment)
    {
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
        throw new InvalidOperationException("A pooled buffer segment was returned twice; its first return gave it to the pool, which may have rented it out again.");

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
    /// Trims a pool at every full collection: an object no one references, whose finalizer the
    /// collector runs each time it finds it unreachable and which puts itself back in the
    /// finalization queue. Once it has been promoted to the oldest generation, that happens at full
    /// collections only (the pattern ArrayPool.Shared uses).
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
