using Mux.Connection;

namespace Mux.Client;

/// <summary>
/// A client's <see cref="MuxRetryBudget"/>: every call made deposits <see cref="MuxRetryBudget.Ratio"/> of a retry, kept for
/// <see cref="WindowSeconds"/> seconds, and every retry withdraws one; <see cref="MuxRetryBudget.MinRetriesPerSecond"/> times the window
/// may be withdrawn whatever was deposited. So over any window, retries are at most Ratio × the calls made in it plus that reserve
/// (Finagle's RetryBudget, gRPC's retry throttling).
/// </summary>
/// <remarks>
/// Deposits are per call, on the caller's thread: each goes to the current second's count, striped by core (<see cref="CoreStripe"/>), so
/// callers on different cores never write one line. Withdrawals are per retry, a rare path, and take the lock.
/// </remarks>
internal sealed class RetryBudget
{
    public const int WindowSeconds = 10;

    // The clock's ticks per second, read once: every call's deposit divides by it.
    private readonly long _ticksPerSecond;
    private readonly double _ratio;
    private readonly long _reserve;

    // The calls made in each second of the window, by second modulo the window. A slot is reused for a later second under _lock (a new
    // counter, once a second at most); a deposit reads the slot's second first, and lands in the old counter only if its thread stalled for
    // most of the window.
    private readonly Slot[] _calls = new Slot[WindowSeconds];

    // The retries of each second of the window, by second modulo the window. Guarded by _lock.
    private readonly long[] _retrySeconds = new long[WindowSeconds];
    private readonly long[] _retries = new long[WindowSeconds];

    private readonly Lock _lock = new();

    public RetryBudget(MuxRetryBudget options, TimeProvider clock)
    {
        _ticksPerSecond = clock.TimestampFrequency;
        _ratio = options.Ratio;
        _reserve = (long)options.MinRetriesPerSecond * WindowSeconds;
        for (int i = 0; i < WindowSeconds; i++)
        {
            _calls[i] = new Slot(long.MinValue);
            _retrySeconds[i] = long.MinValue;
        }
    }

    /// <summary>Retries withdrawn so far, for the load runner and tests.</summary>
    public long Withdrawn { get; private set; }

    /// <summary>A call was made at <paramref name="now"/> (a timestamp of the client's clock).</summary>
    public void Deposit(long now)
    {
        long second = SecondOf(now);
        Slot slot = Volatile.Read(ref _calls[SlotOf(second)]);
        if (slot.Second != second)
        {
            slot = Roll(second);
        }

        Interlocked.Increment(ref slot.Calls[Thread.GetCurrentProcessorId() & (StripedCounter.StripeCount - 1)].Value);
    }

    /// <summary>Takes one retry if the budget has one at <paramref name="now"/>.</summary>
    public bool TryWithdraw(long now)
    {
        long second = SecondOf(now);
        lock (_lock)
        {
            long calls = 0;
            long retries = 0;
            for (int i = 0; i < WindowSeconds; i++)
            {
                Slot slot = _calls[i];
                if (InWindow(slot.Second, second))
                {
                    calls += CoreStripe.Sum(slot.Calls);
                }

                if (InWindow(_retrySeconds[i], second))
                {
                    retries += _retries[i];
                }
            }

            if ((long)(_ratio * calls) + _reserve - retries < 1)
            {
                return false;
            }

            int index = SlotOf(second);
            if (_retrySeconds[index] != second)
            {
                _retrySeconds[index] = second;
                _retries[index] = 0;
            }

            _retries[index]++;
            Withdrawn++;
            return true;
        }
    }

    private Slot Roll(long second)
    {
        lock (_lock)
        {
            ref Slot slot = ref _calls[SlotOf(second)];
            if (slot.Second < second) // Not over a later second's: a deposit from a thread that stalled counts there.
            {
                Volatile.Write(ref slot, new Slot(second));
            }

            return slot;
        }
    }

    private long SecondOf(long timestamp) => timestamp / _ticksPerSecond;

    private static int SlotOf(long second) => (int)(((second % WindowSeconds) + WindowSeconds) % WindowSeconds);

    // A slot stamped with a second within the window that ends with (and includes) the current one.
    private static bool InWindow(long stamped, long current) => stamped <= current && stamped > current - WindowSeconds;

    private sealed class Slot(long second)
    {
        public readonly long Second = second;
        public readonly CoreStripe[] Calls = new CoreStripe[StripedCounter.StripeCount];
    }
}
