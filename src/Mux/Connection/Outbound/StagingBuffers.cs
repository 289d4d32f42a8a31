using System.Collections.Concurrent;
using Mux.Protocol;

namespace Mux.Connection;

/// <summary>
/// One per thread, so serialization runs in parallel on every caller's core and a serializer that throws leaves nothing
/// half-written in any queue. A large frame's buffer is handed to the writer whole and its thread takes a spare one.
/// </summary>

internal static class StagingBuffers
{
    // A staging buffer that grew past this after a large frame is dropped rather than kept per thread.
    private const int MaxRetainedSize = 64 * 1024;

    // Staging buffers handed over and written, for threads that gave theirs away: returned by writers, taken by senders (any
    // thread, any connection). At most MaxSpare of at most MaxSpareSize, so 8 MiB at worst; the count is approximate
    // (incremented before the enqueue, decremented after the dequeue).
    private const int MaxSpare = 512;
    private const int MaxSpareSize = 16 * 1024;
    private static readonly ConcurrentQueue<PooledBufferWriter> s_spare = new();
    private static int s_spareCount;

    // This thread's buffer; null after it was handed over or dropped.
    [ThreadStatic]
    private static PooledBufferWriter? t_staging;

    public static PooledBufferWriter Rent()
    {
        PooledBufferWriter staging = t_staging ??= new PooledBufferWriter();
        staging.Reset();
        return staging;
    }

    // For a buffer a failed serializer may have left in a strange state.
    public static void Discard(PooledBufferWriter staging)
    {
        t_staging = null;
        staging.Dispose();
    }

    // The writer owns this thread's buffer now: take a spare one.
    public static void HandOver()
    {
        if (s_spare.TryDequeue(out PooledBufferWriter? spare))
        {
            Interlocked.Decrement(ref s_spareCount);
        }

        t_staging = spare ?? new PooledBufferWriter();
    }

    // Drops a buffer that grew for one large frame, once its bytes have been copied out.
    public static void ReleaseIfOversized(PooledBufferWriter staging)
    {
        if (staging.Buffer.Length > MaxRetainedSize)
        {
            Discard(staging);
        }
    }

    public static void ReturnSpare(PooledBufferWriter staging)
    {
        if (staging.Buffer.Length <= MaxSpareSize)
        {
            if (Interlocked.Increment(ref s_spareCount) <= MaxSpare)
            {
                staging.Reset();
                s_spare.Enqueue(staging);
                return;
            }

            Interlocked.Decrement(ref s_spareCount);
        }

        staging.Dispose();
    }
}
