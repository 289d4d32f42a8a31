using System.Diagnostics;
using MessagePack;
using Mux.Connection;

namespace Mux.Streaming;

/// <summary>
/// Sends a producer's items as one stream of a call, on either side, each within the consumer's
/// credit. Small items go out in batches: while the producer hands out items synchronously and
/// credit remains, each is queued on the connection without waking its writer, and the batch is
/// flushed once, when the producer is about to wait (for its next item or for credit), when it
/// has reached <see cref="MaxBatchBytes"/>, or when its first item has waited
/// <see cref="MaxBatchDelayMilliseconds"/>. Items after a large one are sent one by one, as any
/// other frame. One flush (one socket send, one wake-up of the
/// peer's reader) per batch instead of per item: per-item flushing held a stream of small items to
/// about 70K items/s. An item is never held back while the producer waits.
/// </summary>
internal static class StreamProducer
{
    // A batch this large goes out at once: large items gain nothing from waiting for more, and
    // the peer starts reading them sooner.
    private const int MaxBatchBytes = 16 * 1024;

    // A producer that yields items synchronously but slowly (a CPU-bound loop) still gets each
    // out within this time, not only when the window is used up.
    private const int MaxBatchDelayMilliseconds = 1;

    private static readonly long s_maxBatchDelay = Stopwatch.Frequency * MaxBatchDelayMilliseconds / 1000;

    /// <summary>Enumerates <paramref name="items"/> with <paramref name="cancellationToken"/> and
    /// sends each within <paramref name="window"/>'s credit. Everything sent is flushed before
    /// this returns or throws. <paramref name="holdsCredit"/>: the caller has already taken the
    /// first item's credit.</summary>
    /// <exception cref="MuxConnectionException">The connection closed.</exception>
    public static async ValueTask SendAsync<T>(MuxConnection connection, IAsyncEnumerable<T> items, StreamSendWindow window, MessagePackSerializerOptions options, CancellationToken cancellationToken, bool holdsCredit = false)
    {
        IAsyncEnumerator<T> enumerator = items.GetAsyncEnumerator(cancellationToken);
        int batchBytes = 0;
        int lastSize = 0;
        long batchStarted = 0;
        try
        {
            while (true)
            {
                ValueTask<bool> next = enumerator.MoveNextAsync();
                if (!next.IsCompleted && batchBytes > 0)
                {
                    connection.SendDeferredStreamItems(); // The producer waits: what it made goes now.
                    batchBytes = 0;
                }

                if (!await next.ConfigureAwait(false))
                {
                    break;
                }

                if (holdsCredit)
                {
                    holdsCredit = false;
                }
                else if (!window.TryTake())
                {
                    if (batchBytes > 0)
                    {
                        connection.SendDeferredStreamItems(); // The consumer needs them to grant more.
                        batchBytes = 0;
                    }

                    await window.WaitAsync(cancellationToken).ConfigureAwait(false);
                }

                if (lastSize >= MaxBatchBytes)
                {
                    // Large items (the last was) go straight out, with whatever is queued before
                    // them, as any other frame: nothing to gain from batching them.
                    lastSize = connection.SendStreamItem(window.CallId, enumerator.Current, options, defer: false);
                    batchBytes = 0;
                    continue;
                }

                int size = lastSize = connection.SendStreamItem(window.CallId, enumerator.Current, options, defer: true);
                if (batchBytes == 0)
                {
                    batchStarted = Stopwatch.GetTimestamp();
                }

                batchBytes += size;
                if (batchBytes >= MaxBatchBytes || Stopwatch.GetTimestamp() - batchStarted >= s_maxBatchDelay)
                {
                    connection.SendDeferredStreamItems();
                    batchBytes = 0;
                }
            }
        }
        finally
        {
            if (batchBytes > 0)
            {
                connection.SendDeferredStreamItems();
            }

            await enumerator.DisposeAsync().ConfigureAwait(false);
        }
    }
}
