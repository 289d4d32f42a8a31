using Mux.Connection;
using Mux.Tests.Infrastructure;

namespace Mux.Tests.Connection;

/// <summary>
/// The call table both roles keep their calls in (pending calls of the caller, running calls of
/// the server): the lock-free slot path, the overflow a call takes when its slot is occupied, the
/// remover checks that keep pooled call objects from being taken under a stale id, and the close.
/// </summary>
public class CallTableTests
{
    // 32 expected calls make 64 slots: ids 1, 65 and 129 share slot 1.
    private const int Expected = 32;
    private const uint Slots = 64;

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
    public void CallsSharingASlot_AreEachFoundAndRemovedExactlyOnce()
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

        // The slot is free again; the call in the overflow is still found, and a new call takes the slot.
        Assert.Same(third, table.Find(1 + (2 * Slots)));
        Entry fourth = Add(table, 1 + (3 * Slots));
        Assert.Same(fourth, table.Find(1 + (3 * Slots)));
        Assert.Same(third, table.TryRemove(1 + (2 * Slots)));
        Assert.Same(fourth, table.TryRemove(1 + (3 * Slots)));
        Assert.Equal(0, table.Count);
    }

    [Fact]
    public async Task ACallWaitingInTheOverflow_SendsOnlyItsOwnSlotsCallsToTheLock()
    {
        var table = new CallTable<Entry>(Expected);
        Add(table, 1);
        Entry waiting = Add(table, 1 + Slots); // In the overflow, as a slow call overtaken by later ids is.

        // Hold the overflow's lock on another thread: a call path that takes it would now block.
        var overflowLock = (Lock)typeof(CallTable<Entry>).GetField("_overflowLock", System.Reflection.BindingFlags.NonPublic | System.Reflection.BindingFlags.Instance)!.GetValue(table)!;
        using var held = new ManualResetEventSlim();
        using var release = new ManualResetEventSlim();
        Task holder = Task.Factory.StartNew(
            () =>
            {
                lock (overflowLock)
                {
                    held.Set();
                    release.Wait();
                }
            },
            CancellationToken.None,
            TaskCreationOptions.LongRunning,
            TaskScheduler.Default);
        held.Wait(TestHost.Patience);

        // Every other slot's calls are added, found and removed without the lock.
        Task others = Task.Run(() =>
        {
            for (uint id = 2; id < 2 + (4 * Slots); id++)
            {
                if (id % Slots == 1)
                {
                    continue;
                }

                Entry entry = Add(table, id);
                Assert.Same(entry, table.Find(id));
                Assert.Null(table.Find(id + Slots));
                Assert.True(table.TryRemove(id, entry));
            }
        });
        Task finished = await Task.WhenAny(others, Task.Delay(TestHost.Patience));
        release.Set();
        await holder;
        Assert.True(finished == others, "A call on another slot waited for the overflow's lock.");
        await others;

        Assert.Same(waiting, table.TryRemove(1 + Slots));
        Assert.Equal(1, table.Count);
    }

    [Fact]
    public void AnIdInTheTable_IsRefused_InItsSlotAndInTheOverflow()
    {
        var table = new CallTable<Entry>(Expected);
        Entry inSlot = Add(table, 5);
        Add(table, 5 + Slots); // Into the overflow: slot 5 is taken.

        Assert.False(table.TryAdd(new Entry(5), out bool closed));
        Assert.False(closed);
        Assert.False(table.TryAdd(new Entry(5 + Slots), out closed));
        Assert.False(closed);
        Assert.Equal(2, table.Count);
        Assert.Same(inSlot, table.Find(5));
    }

    [Fact]
    public void ARemoverHoldingAStaleId_DoesNotTakeThePooledCallUnderItsNewId()
    {
        var table = new CallTable<Entry>(Expected);
        Entry call = Add(table, 3);
        Assert.True(table.TryRemove(3, call));

        // Reused for a later call whose id maps to the same slot (the pool hands objects back out).
        call.CallId = 3 + Slots;
        Assert.True(table.TryAdd(call, out _));

        Assert.False(table.TryRemove(3, call));
        Assert.Null(table.TryRemove(3));
        Assert.Same(call, table.Find(3 + Slots));
        Assert.Equal(1, table.Count);
    }

    [Fact]
    public void RemoveWhere_TakesTheMatchingCalls_FromSlotsAndOverflow_AndLeavesTheRest()
    {
        var table = new CallTable<Entry>(Expected);
        for (uint id = 1; id <= 10; id++)
        {
            Add(table, id);
            Add(table, id + Slots); // Every one of these goes to the overflow.
        }

        List<Entry>? removed = null;
        table.RemoveWhere(8u, static (call, last) => call.CallId % Slots > last, ref removed);

        Assert.NotNull(removed);
        Assert.Equal([9u, 10u, 9u + Slots, 10u + Slots], removed.Select(e => e.CallId).Order());
        Assert.Equal(16, table.Count);
        Assert.Null(table.Find(10 + Slots));
        Assert.NotNull(table.Find(8 + Slots));

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
        Assert.Null(table.Find(3));
    }
}

/// <summary>The call cap's slots: each is taken once, given back once, and a waiter gets the one a
/// release frees.</summary>
public class CallSlotsTests
{
    [Fact]
    public void EverySlotIsTakenOnce_AndGivenBackOnce()
    {
        var slots = new CallSlots(3);
        Assert.Equal(3, slots.Free);
        Assert.True(slots.TryTake());
        Assert.True(slots.TryTake());
        Assert.True(slots.TryTake());
        Assert.False(slots.TryTake());
        Assert.Equal(0, slots.Free);

        slots.Release();
        Assert.Equal(1, slots.Free);
        Assert.True(slots.TryTake());
        Assert.False(slots.TryTake());

        slots.Release();
        slots.Release();
        Assert.Equal(2, slots.Free);
    }

    [Fact]
    public void AQueuedCall_GetsTheSlotAReleaseFrees_OldestFirst()
    {
        var slots = new CallSlots(1);
        Assert.True(slots.TryTake());
        PendingCall first = PendingCall<int>.Rent(null!, 1, default);
        PendingCall second = PendingCall<int>.Rent(null!, 1, default);
        Assert.Equal(SlotQueueing.Queued, slots.Enqueue(first, out _));
        Assert.Equal(SlotQueueing.Queued, slots.Enqueue(second, out _));
        Assert.Equal(2, slots.Queued);

        Assert.Same(first, slots.Release());
        Assert.Equal(0, slots.Free); // The first call holds it.
        Assert.False(slots.TryTake());
        Assert.Same(second, slots.Release());
        Assert.Null(slots.Release());
        Assert.Equal(1, slots.Free);
        Assert.Equal(0, slots.Queued);
    }

    [Fact]
    public void ACallThatQueuesAsASlotIsFreed_TakesIt_InsteadOfWaiting()
    {
        var slots = new CallSlots(0);
        Assert.Null(slots.Release());
        PendingCall call = PendingCall<int>.Rent(null!, 1, default);
        Assert.Equal(SlotQueueing.SlotTaken, slots.Enqueue(call, out _));
        Assert.Equal((0, 0), (slots.Free, slots.Queued));
    }

    [Fact]
    public void FailedSlots_ReturnTheWaitingCallsOldestFirst_AndRefuseEachLaterOne_WithAnExceptionOfItsOwn()
    {
        var slots = new CallSlots(1);
        Assert.True(slots.TryTake());
        PendingCall first = PendingCall<int>.Rent(null!, 1, default);
        PendingCall second = PendingCall<int>.Rent(null!, 1, default);
        slots.Enqueue(first, out _);
        slots.Enqueue(second, out _);

        PendingCall? failed = slots.Fail(() => new InvalidOperationException("The connection closed."));
        Assert.Same(first, failed);
        Assert.Same(second, failed!.QueueNext);
        Assert.Null(second.QueueNext);
        Assert.False(slots.TryUnlink(first)); // Out of the queue already.
        Assert.Null(slots.Release()); // Nobody waits: the slot is free.

        Assert.Equal(SlotQueueing.Refused, slots.Enqueue(PendingCall<int>.Rent(null!, 1, default), out Func<Exception>? refused));
        Exception one = refused!();
        Exception two = refused();
        Assert.Equal("The connection closed.", one.Message);

        // Thrown on different threads, one shared instance would carry whichever stack trace was written last.
        Assert.NotSame(one, two);
    }
}
