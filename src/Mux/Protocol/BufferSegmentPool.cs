using System.Buffers;
using System.Diagnostics;
using System.Diagnostics.CodeAnalysis;

namespace Mux.Protocol;

/// <summary>
/// The segments large messages are encoded and reassembled in. A 64 KiB segment stays below the large object heap,
/// which only a full collection (pausing every call) reclaims.
/// </summary>
/// <remarks>
/// ArrayPool.Shared keeps about 32 arrays of a size per core, fewer than a 16 MiB message needs. This pool keeps up to
/// <see cref="MaxRetained"/> and, at each full collection, drops those nobody rented since the previous one, so a burst
/// of large messages is released once it ends. The lock is taken once per 64 KiB, never per small call.
/// </remarks>
internal sealed class BufferSegmentPool
{
    /// <summary>65,560 bytes with the array's header, below the large object heap's 85,000.</summary>
    public const int SegmentSize = 64 * 1024;

    /// <summary>Free segments kept by <see cref="Shared"/> (32 MiB).</summary>
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

    /// <summary>Only <see cref="Shared"/> trims itself at full collections.</summary>
    public BufferSegmentPool(int maxRetained)
    {
        ArgumentOutOfRangeException.ThrowIfNegativeOrZero(maxRetained);
        _free = new BufferSegment[maxRetained];
    }

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

    /// <summary>An empty, unlinked segment; oversized, from ArrayPool.Shared, when <paramref name="size"/> needs it.</summary>
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

    /// <summary>Takes back a chain (null for none); returns the bytes of its arrays, a landed one's included.</summary>
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

    /// <summary>An unreferenced object whose finalizer registers itself again: once in the oldest generation it runs at
    /// full collections only, as ArrayPool.Shared's trim does.</summary>

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
