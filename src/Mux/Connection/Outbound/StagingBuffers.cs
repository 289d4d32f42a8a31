using System.Collections.Concurrent;
using Mux.Protocol;

namespace Mux.Connection;

/// <summary>
/// The buffers frames are encoded into on their sender's thread, before they are known to be
/// complete and valid: one per thread, so serialization runs in parallel on every caller's core and
/// a serializer that throws leaves nothing half-written in any queue. A large frame's buffer is
/// handed to the writer whole (OutboundQueue) and its thread takes a spare one, which the writer
/// gives back once it has written the frame.
/// </summary>
internal static class StagingBuffers
{
    // A staging buffer that grew past this after a large frame is dropped rather than kept per thread.
    private const int MaxRetainedSize = 64 * 1024;

    // Staging buffers handed over and written, for threads that gave theirs away. Returned by
    // writers, taken by senders (any thread, any connection); at most MaxSpare kept, each at most
    // MaxSpareSize, so the process keeps 8 MiB for them at worst. The count is approximate
    // (incremented before the enqueue, decremented after the dequeue).
    private const int MaxSpare = 512;
    private const int MaxSpareSize = 16 * 1024;
    private static readonly ConcurrentQueue<PooledBufferWriter> s_spare = new();
    private static int s_spareCount;

    // This thread's buffer; null after it was handed over or dropped.
    [ThreadStatic]
    private static PooledBufferWriter? t_staging;

    /// <summary>This thread's buffer, empty.</summary>
    public static PooledBufferWriter Rent()
    {
        PooledBufferWriter staging = t_staging ??= new PooledBufferWriter();
        staging.Reset();
        return staging;
    }

    /// <summary>Drops a buffer a failed serializer may have left in a strange state.</summary>
    public static void Discard(PooledBufferWriter staging)
    {
        t_staging = null;
        staging.Dispose();
    }

    /// <summary>The writer owns this thread's buffer now: take a spare one.</summary>
    public static void HandOver()
    {
        if (s_spare.TryDequeue(out PooledBufferWriter? spare))
        {
            Interlocked.Decrement(ref s_spareCount);
        }

        t_staging = spare ?? new PooledBufferWriter();
    }

    /// <summary>Drops a buffer that grew for one large frame instead of keeping it for the thread's
    /// lifetime. Call once its bytes have been copied out.</summary>
    public static void ReleaseIfOversized(PooledBufferWriter staging)
    {
        if (staging.Buffer.Length > MaxRetainedSize)
        {
            Discard(staging);
        }
    }

    /// <summary>Keeps a written hand-over buffer for the next thread that needs one, or frees it.</summary>
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
