using MessagePack;
using Mux.Connection;
using Mux.Protocol;
using Mux.Serialization;

namespace Mux.Streaming;

/// <summary>
/// Sends a producer's items as one stream of a call, on either side, each within the consumer's
/// credit. Small items that come quickly go out in batches: each is queued on the connection
/// without waking its writer, and the batch is flushed once, when the producer is about to wait
/// (for its next item or for credit), when it has reached <see cref="MaxBatchBytes"/>, or at the
/// latest <see cref="MaxBatchDelayMicroseconds"/> after its first item (a timer, for a producer
/// that blocks its thread making the next item). An item that took the producer
/// <see cref="SlowItemMicroseconds"/> or more to make, and every item after a large one, goes out
/// at once, as any other frame (with the batch before it). So an item waits at most about a
/// millisecond for the ones after it, and one flush (one socket send, one wake-up of the peer's
/// reader) serves a whole batch: per-item flushing held a stream of small items to about 80K items/s.
/// </summary>
internal static class StreamProducer
{
    // A batch this large goes out at once: large items gain nothing from waiting for more, and
    // the peer starts reading them sooner.
    private const int MaxBatchBytes = 16 * 1024;

    // A batch's first item waits at most this long (give or take the timer's resolution) for
    // the items after it.
    private const int MaxBatchDelayMicroseconds = 1000;

    // An item that took this long to make comes from a slow producer (a CPU-bound loop, or one
    // that waited): nothing is gained by holding it back for the next.
    private const int SlowItemMicroseconds = 100;

    private static readonly TimeSpan s_maxBatchDelay = TimeSpan.FromMicroseconds(MaxBatchDelayMicroseconds);

    // Flushes a batch whose producer is still making the next item. Any thread; a batch already
    // flushed leaves nothing to send.
    private static readonly TimerCallback s_flushBatch = static state => ((Outbound)state!).SendQueuedFrames();

    /// <summary>Enumerates <paramref name="items"/> with <paramref name="cancellationToken"/> and
    /// sends each, serialized with the connection's options, within <paramref name="window"/>'s
    /// credit. Everything sent is flushed before this returns or throws.
    /// <paramref name="holdsCredit"/>: the caller has already taken the first item's credit. <paramref name="servedCall"/>: the server call whose result this is
    /// (null for a client's stream), cancelled here when the connection is lost.</summary>
    /// <exception cref="MuxConnectionException">The connection closed.</exception>
    public static async ValueTask SendAsync<T>(MuxConnection connection, IAsyncEnumerable<T> items, StreamSendWindow window, CancellationToken cancellationToken, bool holdsCredit = false, IncomingCall? servedCall = null)
    {
        MessagePackSerializerOptions options = connection.SerializerOptions;
        Outbound outbound = connection.Outbound;

        // On the connection's clock, as every timer and clock read of the engine.
        TimeProvider clock = connection.TimeProvider;
        long slowItem = clock.TimestampFrequency * SlowItemMicroseconds / 1_000_000;

        // Completed by a callback registered before the enumerator exists: a token runs its
        // callbacks newest first, so this one runs after every callback the producer registered
        // (and after the window's wait). Once it has run, the producer has heard of the cancel, and
        // its enumerator may be disposed (which may unregister what it registered); until then the
        // stream neither stops nor disposes it. Continuations run on the thread pool: the stream
        // never goes on (finishing its call) inside the canceller's callback loop. One TCS and one
        // registration per stream whose token can be cancelled; nothing per item.
        TaskCompletionSource? stopped = null;
        CancellationTokenRegistration heard = default;
        if (cancellationToken.CanBeCanceled)
        {
            stopped = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
            heard = cancellationToken.UnsafeRegister(static state => ((TaskCompletionSource)state!).TrySetResult(), stopped);
        }

        IAsyncEnumerator<T> enumerator = items.GetAsyncEnumerator(cancellationToken);
        int batchBytes = 0;
        int lastSize = 0;

        // Armed when a batch starts; created with the first batch (a stream of large or slowly
        // made items never needs one). Only this method touches it.
        ITimer? batchTimer = null;

        // The producer's MoveNextAsync still running when the stream stopped: the enumerator is
        // disposed once it completes (an enumerator must not be disposed while it moves).
        Task<bool>? abandoned = null;
        try
        {
            while (true)
            {
                long asked = clock.GetTimestamp();
                ValueTask<bool> next = enumerator.MoveNextAsync();
                if (!next.IsCompleted && batchBytes > 0)
                {
                    outbound.SendQueuedFrames(); // The producer waits: what it made goes now.
                    batchBytes = 0;
                }

                bool more;
                if (next.IsCompleted || stopped is null)
                {
                    more = await next.ConfigureAwait(false);
                }
                else
                {
                    // A producer that ignores its token would hold the call open (its slot, its
                    // window, its caller) until it next yields: the stream stops at the cancellation
                    // instead. A Task and a WhenAny per wait, only when the producer had no item ready.
                    Task<bool> moving = next.AsTask();
                    if (await Task.WhenAny(moving, stopped.Task).ConfigureAwait(false) != moving)
                    {
                        abandoned = moving;
                        cancellationToken.ThrowIfCancellationRequested();
                    }

                    more = await moving.ConfigureAwait(false);
                }

                if (!more)
                {
                    break;
                }

                long made = clock.GetTimestamp();

                if (holdsCredit)
                {
                    holdsCredit = false;
                }
                else if (!window.TryTake())
                {
                    if (batchBytes > 0)
                    {
                        outbound.SendQueuedFrames(); // The consumer needs them to grant more.
                        batchBytes = 0;
                    }

                    await window.WaitAsync(cancellationToken).ConfigureAwait(false);
                }

                // Large items (the last was) and slowly made ones go straight out, with whatever is
                // queued before them, as any other frame; the others wait for the batch's flush.
                bool atOnce = lastSize >= MaxBatchBytes || made - asked >= slowItem;
                var item = new MessagePackBody<T>(enumerator.Current, options);
                lastSize = outbound.SendFrame(FrameType.StreamItem, window.CallId, 0, ref item, window.IdSpace, defer: !atOnce);
                if (atOnce)
                {
                    batchBytes = 0;
                    continue;
                }

                if (batchBytes == 0)
                {
                    batchTimer ??= clock.CreateTimer(s_flushBatch, outbound, Timeout.InfiniteTimeSpan, Timeout.InfiniteTimeSpan);
                    batchTimer.Change(s_maxBatchDelay, Timeout.InfiniteTimeSpan);
                }

                batchBytes += lastSize;
                if (batchBytes >= MaxBatchBytes)
                {
                    outbound.SendQueuedFrames();
                    batchBytes = 0;
                }
            }
        }
        catch (MuxConnectionException) when (servedCall is not null && connection.IsClosed)
        {
            // The connection is gone. Its close cancels the call's token on the thread pool, which
            // may run only after the finally below has disposed the producer (and its token
            // registrations); fire it first, on the producer's own thread, so a server's producer
            // always learns of the loss through its token, as it does of a client's Cancel.
            servedCall.RequestCancel(inline: true);
            throw;
        }
        finally
        {
            batchTimer?.Dispose();
            if (batchBytes > 0)
            {
                outbound.SendQueuedFrames();
            }

            if (stopped is not null && cancellationToken.IsCancellationRequested)
            {
                // Stopped by the cancel (the window's wait, the producer's own throw): its
                // callbacks may still be running, the producer's among them.
                await stopped.Task.ConfigureAwait(false);
            }

            heard.Dispose();
            if (abandoned is null)
            {
                await enumerator.DisposeAsync().ConfigureAwait(false);
            }
            else
            {
                _ = DisposeWhenMovedAsync(abandoned, enumerator);
            }
        }
    }

    /// <summary>Disposes the enumerator of a stopped stream once its producer, which ignored the
    /// cancellation, has made its next item (or failed, or ended). Its item, its failure and a
    /// failure of its disposal have nobody left to go to: the call has ended.</summary>
    private static async Task DisposeWhenMovedAsync<T>(Task<bool> moving, IAsyncEnumerator<T> enumerator)
    {
        try
        {
            await moving.ConfigureAwait(false);
        }
        catch (Exception)
        {
            // See the summary.
        }

        try
        {
            await enumerator.DisposeAsync().ConfigureAwait(false);
        }
        catch (Exception)
        {
            // See the summary.
        }
    }
}
