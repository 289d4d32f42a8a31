using Mux.Connection;
using Mux.Tests.Infrastructure;

namespace Mux.Tests.Connection;

/// <summary>
/// The call table both roles keep their calls in (pending calls of the caller, running calls of
/// the server): lookups and removals by id, the remover checks that keep pooled call objects from
/// being taken under a stale id, the scans, the count and the close.
/// </summary>
public class CallTableTests
{
    // Ids 1, 65 and 129 have the same low bits, as ids of calls that come round a table's slots do.
    private const int Expected = 32;
    private const uint Slots = 64;

    // How long a look from another thread is given to come back while a scan's match holds the table.
    private static readonly TimeSpan HeldWindow = TimeSpan.FromMilliseconds(250);

    private sealed class Entry(uint callId) : ICallTableEntry
    {
        public uint CallId { get; set; } = callId;
    }

    private static Entry Add(CallTable<Entry> table, uint callId)
    {
        var entry = new Entry(callId);
        Assert.True(table.TryAdd(entry, out bool closed));
        Assert.False(closed);
        return entry;
    }

    [Fact]
    public void CallsWithTheSameLowBits_AreEachFoundAndRemovedExactlyOnce()
    {
        var table = new CallTable<Entry>(Expected);
        Entry first = Add(table, 1);
        Entry second = Add(table, 1 + Slots);
        Entry third = Add(table, 1 + (2 * Slots));
        Assert.Equal(3, table.Count);

        Assert.Same(first, table.Find(1));
        Assert.Same(second, table.Find(1 + Slots));
        Assert.Same(third, table.Find(1 + (2 * Slots)));
        Assert.Null(table.Find(1 + (3 * Slots)));

        Assert.Same(second, table.TryRemove(1 + Slots));
        Assert.Null(table.TryRemove(1 + Slots));
        Assert.True(table.TryRemove(1, first));
        Assert.False(table.TryRemove(1, first));
        Assert.Equal(1, table.Count);

        // The others' removal leaves the third findable, and a new call with the same low bits is added beside it.
        Assert.Same(third, table.Find(1 + (2 * Slots)));
        Entry fourth = Add(table, 1 + (3 * Slots));
        Assert.Same(fourth, table.Find(1 + (3 * Slots)));
        Assert.Same(third, table.TryRemove(1 + (2 * Slots)));
        Assert.Same(fourth, table.TryRemove(1 + (3 * Slots)));
        Assert.Equal(0, table.Count);
    }

    [Fact]
    public async Task LookupsOfOtherIds_WaitOnlyWhileAScansMatchRuns_ThenFindTheirCalls()
    {
        // A scan's match runs under the table's lock, so the calls of every id wait while it runs (where the lock-free
        // table sent only the calls of one slot to its lock): they must go on, and find their calls, once it returns.
        var table = new CallTable<Entry>(Expected);
        Entry selected = Add(table, 1);
        Entry kept = Add(table, 1 + Slots);
        using var judging = new ManualResetEventSlim();
        using var release = new ManualResetEventSlim();
        List<Entry>? removed = null;
        Task scan = Task.Factory.StartNew(
            () => table.RemoveWhere(1u, (call, id) =>
            {
                if (call.CallId == id)
                {
                    judging.Set();
                    release.Wait(TestHost.Patience);
                }

                return call.CallId == id;
            }, ref removed),
            CancellationToken.None,
            TaskCreationOptions.LongRunning,
            TaskScheduler.Default);
        Assert.True(judging.Wait(TestHost.Patience), "The scan never judged call 1.");

        Task others = Task.Factory.StartNew(
            () =>
            {
                for (uint id = 2; id < 2 + (4 * Slots); id++)
                {
                    if (id % Slots == 1)
                    {
                        continue;
                    }

                    Entry entry = Add(table, id);
                    Assert.Same(entry, table.Find(id));
                    Assert.Null(table.Find(id + (8 * Slots)));
                    Assert.True(table.TryRemove(id, entry));
                }

                Assert.Same(kept, table.Find(1 + Slots));
            },
            CancellationToken.None,
            TaskCreationOptions.LongRunning,
            TaskScheduler.Default);
        bool ranDuringMatch = await Task.WhenAny(others, Task.Delay(HeldWindow)) == others;
        release.Set();
        await scan.WaitAsync(TestHost.Patience);
        await others.WaitAsync(TestHost.Patience);
        Assert.False(ranDuringMatch, "Calls of other ids went through the table while a scan's match held it.");

        Assert.Same(selected, Assert.Single(removed!));
        Assert.Same(kept, table.TryRemove(1 + Slots));
        Assert.Equal(0, table.Count);
    }

    [Fact]
    public void AnIdInTheTable_IsRefused_AndItsCallKept()
    {
        var table = new CallTable<Entry>(Expected);
        Entry first = Add(table, 5);
        Entry second = Add(table, 5 + Slots);

        Assert.False(table.TryAdd(new Entry(5), out bool closed));
        Assert.False(closed);
        Assert.False(table.TryAdd(new Entry(5 + Slots), out closed));
        Assert.False(closed);
        Assert.Equal(2, table.Count);
        Assert.Same(first, table.Find(5));
        Assert.Same(second, table.Find(5 + Slots));
    }

    [Fact]
    public void ARemoverHoldingAStaleId_DoesNotTakeThePooledCallUnderItsNewId()
    {
        var table = new CallTable<Entry>(Expected);
        Entry call = Add(table, 3);
        Assert.True(table.TryRemove(3, call));

        // Reused for a later call (the pool hands objects back out).
        call.CallId = 3 + Slots;
        Assert.True(table.TryAdd(call, out _));

        Assert.False(table.TryRemove(3, call));
        Assert.Null(table.TryRemove(3));
        Assert.Same(call, table.Find(3 + Slots));
        Assert.Equal(1, table.Count);
    }

    [Fact]
    public void RemoveWhere_TakesTheMatchingCalls_AndLeavesTheRest()
    {
        var table = new CallTable<Entry>(Expected);
        for (uint id = 1; id <= 10; id++)
        {
            Add(table, id);
            Add(table, id + Slots);
        }

        List<Entry>? removed = null;
        table.RemoveWhere(8u, static (call, last) => call.CallId % Slots > last, ref removed);

        Assert.NotNull(removed);
        Assert.Equal([9u, 10u, 9u + Slots, 10u + Slots], removed.Select(e => e.CallId).Order());
        Assert.Equal(16, table.Count);
        Assert.Null(table.Find(10 + Slots));
        Assert.NotNull(table.Find(8 + Slots));
        Assert.Equal(16, table.Snapshot().Count);

        List<Entry>? none = null;
        table.RemoveWhere(0, static (_, _) => false, ref none);
        Assert.Null(none);
    }

    [Fact]
    public void Close_TakesEveryCall_AndRefusesLaterOnes()
    {
        var table = new CallTable<Entry>(Expected);
        Add(table, 1);
        Add(table, 1 + Slots);
        Add(table, 2);

        var removed = new List<Entry>();
        table.Close(removed);

        Assert.Equal([1u, 2u, 1u + Slots], removed.Select(e => e.CallId).Order());
        Assert.Equal(0, table.Count);
        Assert.False(table.TryAdd(new Entry(3), out bool closed));
        Assert.True(closed);
        Assert.Equal(0, table.Count);
        Assert.Null(table.Find(3));
    }

    [Fact]
    public async Task Count_IsExact_AfterAddsAndRemovesFromManyThreads()
    {
        var table = new CallTable<Entry>(Expected);
        const int Threads = 8;
        const int Calls = 5_000;
        using var start = new ManualResetEventSlim();
        Task[] workers = Enumerable.Range(0, Threads).Select(i => Task.Factory.StartNew(
            () =>
            {
                start.Wait();
                uint first = (uint)(i * 100_000) + 1;
                for (uint n = 0; n < Calls + i; n++)
                {
                    Entry entry = Add(table, first + n);
                    if (n % 2 == 0 && n < Calls)
                    {
                        // Both removers: by id and object, and by id alone.
                        Assert.True(n % 4 == 0 ? table.TryRemove(entry.CallId, entry) : ReferenceEquals(table.TryRemove(entry.CallId), entry));
                    }
                }
            },
            CancellationToken.None,
            TaskCreationOptions.LongRunning,
            TaskScheduler.Default)).ToArray();

        start.Set();
        await Task.WhenAll(workers).WaitAsync(TestHost.Patience);

        // Half of each thread's first Calls adds were taken back; thread i made i more: 0 + 1 + ... + 7.
        const int Left = (Threads * Calls / 2) + (Threads * (Threads - 1) / 2);
        Assert.Equal(Left, table.Count);
        Assert.Equal(Left, table.Snapshot().Count);
    }
}

/// <summary>The call cap's slots, kept in per-core stripes: the total stays exact whichever core
/// takes or gives back, and a take finds a slot on any stripe.</summary>
public class CallSlotsTests
{
    [Fact]
    public void EverySlotIsTakenOnce_FromWhicheverStripeHoldsIt_AndGivenBackToAnyStripe()
    {
        var slots = new CallSlots(3);
        Assert.Equal(3, slots.Free);
        Assert.True(slots.TryTake());
        Assert.True(slots.TryTake());
        Assert.True(slots.TryTake());
        Assert.False(slots.TryTake());
        Assert.Equal(0, slots.Free);

        // Given back to a stripe no taker calls home (masked into range): still found.
        slots.Release(slots.HomeStripe + 1);
        Assert.Equal(1, slots.Free);
        Assert.True(slots.TryTake());
        Assert.False(slots.TryTake());

        slots.Release();
        slots.Release(7);
        Assert.Equal(2, slots.Free);
    }

    [Fact]
    public async Task AWaiter_GetsTheSlotAReleaseOnAnyStripeFrees()
    {
        var slots = new CallSlots(1);
        Assert.True(slots.TryTake());
        ValueTask waiting = slots.WaitAsync(Timeout.InfiniteTimeSpan, TimeProvider.System, CancellationToken.None);
        Assert.False(waiting.IsCompleted);

        slots.Release(slots.HomeStripe + 1);
        await waiting.AsTask().WaitAsync(TestHost.Patience);
        Assert.Equal(0, slots.Free); // The waiter holds it.
        Assert.False(slots.TryTake());
    }

    [Fact]
    public async Task FailedSlots_FailEachWaiterAndEachLaterWait_WithAnExceptionOfItsOwn()
    {
        var slots = new CallSlots(1);
        Assert.True(slots.TryTake());
        Task first = slots.WaitAsync(Timeout.InfiniteTimeSpan, TimeProvider.System, CancellationToken.None).AsTask();
        Task second = slots.WaitAsync(Timeout.InfiniteTimeSpan, TimeProvider.System, CancellationToken.None).AsTask();

        slots.Fail(() => new InvalidOperationException("The connection closed."));

        var one = await Assert.ThrowsAsync<InvalidOperationException>(() => first.WaitAsync(TestHost.Patience));
        var two = await Assert.ThrowsAsync<InvalidOperationException>(() => second.WaitAsync(TestHost.Patience));
        var later = await Assert.ThrowsAsync<InvalidOperationException>(() => slots.WaitAsync(Timeout.InfiniteTimeSpan, TimeProvider.System, CancellationToken.None).AsTask());
        Assert.Equal("The connection closed.", later.Message);

        // Thrown on different threads, one shared instance would carry whichever stack trace was written last.
        Assert.NotSame(one, two);
        Assert.NotSame(one, later);
        Assert.NotSame(two, later);
    }
}
