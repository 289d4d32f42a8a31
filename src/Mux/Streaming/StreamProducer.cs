using MessagePack;
using Mux.Connection;
using Mux.Protocol;
using Mux.Serialization;

namespace Mux.Streaming;

/// <summary>Small items that come quickly are flushed as one batch (one socket send, one wake-up of the peer's reader): when
/// the producer is about to wait, at <see cref="MaxBatchBytes"/>, or by a timer. Slowly made and large items go at once.</summary>
internal static class StreamProducer
{
    // Large items gain nothing from waiting for more, and the peer starts reading them sooner.
    private const int MaxBatchBytes = 16 * 1024;

    // A batch's first item waits at most this long for the next, give or take the timer's resolution.
    private const int MaxBatchDelayMicroseconds = 1000;

    // An item that took this long to make comes from a slow producer: nothing is gained by holding it back for the next.
    private const int SlowItemMicroseconds = 100;

    private static readonly TimeSpan s_maxBatchDelay = TimeSpan.FromMicroseconds(MaxBatchDelayMicroseconds);

    // Flushes a batch whose producer is still making the next item; a batch already flushed leaves nothing to send.
    private static readonly TimerCallback s_flushBatch = static state => ((Outbound)state!).SendQueuedFrames();

    /// <summary>Flushes everything sent before it returns or throws. <paramref name="holdsCredit"/>: the caller took the
    /// first item's credit. <paramref name="servedCall"/> is cancelled here when the connection is lost.</summary>

    /// <exception cref="MuxConnectionException">The connection closed.</exception>
    public static async ValueTask SendAsync<T>(
        MuxConnection connection, IAsyncEnumerable<T> items, StreamSendWindow window, CancellationToken cancellationToken,
        bool holdsCredit = false, IncomingCall? servedCall = null)
    {
        MessagePackSerializerOptions options = connection.SerializerOptions;
        Outbound outbound = connection.Outbound;

        TimeProvider clock = connection.TimeProvider;
        long slowItem = clock.TimestampFrequency * SlowItemMicroseconds / 1_000_000;

        // Registered before the enumerator exists: a token runs its callbacks newest first, so once this one has run the
        // producer has heard of the cancel, and its enumerator may be disposed. Continuations run on the thread pool, so the
        // stream never finishes its call inside the canceller's callback loop.
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

        // Created with the first batch (a stream of large or slowly made items never needs one).
        ITimer? batchTimer = null;

        // A MoveNextAsync still running when the stream stopped: an enumerator must not be disposed while it moves.
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
                    // A producer that ignores its token would hold the call open until it next yields: stop at the cancellation.
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

                // Large items (the last was) and slowly made ones go straight out, with what is queued before them.
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
            // The close cancels the call's token on the thread pool, perhaps after the finally below has disposed the producer
            // and its registrations: fire it first, on this thread, so a served producer always learns of the loss by its token.
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
                // Stopped by the cancel: its callbacks, the producer's among them, may still be running.
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

    // Once a producer that ignored the cancellation has moved; its item and failures have nobody to go to.
    private static async Task DisposeWhenMovedAsync<T>(Task<bool> moving, IAsyncEnumerator<T> enumerator)
    {
        try
        {
            await moving.ConfigureAwait(false);
        }
        catch (Exception)
        {
            // Nobody to tell.
        }

        try
        {
            await enumerator.DisposeAsync().ConfigureAwait(false);
        }
        catch (Exception)
        {
            // Nobody to tell.
        }
    }
}
