using Mux.Connection;

namespace Mux.Tests.Races;

/// <summary>
/// Calls waiting for a call slot that are given up on (their token, their deadline: CallSlots.TryUnlink)
/// while the slots fail (GoAway, the close) or while a slot is handed from call to call: each call
/// leaves the queue exactly once, by one of those ways, and no slot is made or lost. (A waiter of
/// the old wait that gave up as the slots failed took itself for one granted a slot and gave one
/// back that it never had.)
/// </summary>
public sealed class SlotWaiterGivingUpAsSlotsFailTests
{
    private const int Rounds = 200;
    private const int Waiters = 64;

    [Fact]
    public async Task WaitersGivenUpOnAsTheSlotsFail_LeaveOnce_AndGiveBackNoSlot()
    {
        for (int round = 0; round < Rounds; round++)
        {
            var slots = new CallSlots(1);
            Assert.True(slots.TryTake()); // Held by a call in flight throughout.
            PendingCall[] calls = Queue(slots, Waiters);

            PendingCall? failed = null;
            bool[] unlinked = await RunWhileGivingUpFromTheLast(() => failed = slots.Fail(() => new InvalidOperationException("The slots failed.")), slots, calls);

            var leftByFail = new HashSet<PendingCall>(ReferenceEqualityComparer.Instance);
            for (PendingCall? call = failed; call is not null; call = call.QueueNext)
            {
                Assert.True(leftByFail.Add(call), $"Round {round}: a call came twice in the failed chain.");
            }

            for (int i = 0; i < Waiters; i++)
            {
                Assert.True(unlinked[i] ^ leftByFail.Contains(calls[i]), $"Round {round}: call {i} left the queue {(unlinked[i] ? "twice" : "never")}.");
            }

            Assert.Equal(0, slots.Queued);
            Assert.True(slots.Free == 0, $"Round {round}: {slots.Free} slots free, for none given back.");
            Assert.Equal(SlotQueueing.Refused, slots.Enqueue(Rent(), out Func<Exception>? refused));
            Assert.Equal("The slots failed.", refused!().Message);
        }
    }

    [Fact]
    public async Task WaitersGivenUpOnAsTheSlotIsHandedOn_LeaveOnce_AndLoseNoSlot()
    {
        // One slot goes from call to call (each gives it back as soon as it has it, as if answered at
        // once) while the calls are given up on from the last: at the end it is free, once.
        for (int round = 0; round < Rounds; round++)
        {
            var slots = new CallSlots(1);
            Assert.True(slots.TryTake());
            PendingCall[] calls = Queue(slots, Waiters);

            var served = new List<PendingCall>();
            bool[] unlinked = await RunWhileGivingUpFromTheLast(
                () =>
                {
                    PendingCall? next = slots.Release();
                    while (next is not null)
                    {
                        served.Add(next);
                        next = slots.Release();
                    }
                },
                slots,
                calls);

            var servedSet = new HashSet<PendingCall>(served, ReferenceEqualityComparer.Instance);
            Assert.Equal(served.Count, servedSet.Count);
            for (int i = 0; i < Waiters; i++)
            {
                Assert.True(unlinked[i] ^ servedSet.Contains(calls[i]), $"Round {round}: call {i} left the queue {(unlinked[i] ? "twice" : "never")}.");
            }

            // Served oldest first.
            int[] order = [.. served.Select(call => Array.IndexOf(calls, call))];
            Assert.Equal(order.Order(), order);
            Assert.Equal(0, slots.Queued);
            Assert.True(slots.Free == 1, $"Round {round}: {slots.Free} slots free, for the one given back ({served.Count} calls served).");
        }
    }

    private static PendingCall Rent() => PendingCall<int>.Rent(null!, 1, default);

    private static PendingCall[] Queue(CallSlots slots, int count)
    {
        var calls = new PendingCall[count];
        for (int i = 0; i < count; i++)
        {
            calls[i] = Rent();
            Assert.Equal(SlotQueueing.Queued, slots.Enqueue(calls[i], out _));
        }

        return calls;
    }

    // Runs act on a thread of its own, started at the moment this thread begins to take the calls
    // out of the queue from the last to the first, and waits for it to end; says which it took out.
    private static async Task<bool[]> RunWhileGivingUpFromTheLast(Action act, CallSlots slots, PendingCall[] calls)
    {
        using var start = new Barrier(2);
        Task running = Task.Factory.StartNew(
            () =>
            {
                start.SignalAndWait();
                act();
            },
            CancellationToken.None,
            TaskCreationOptions.LongRunning,
            TaskScheduler.Default);
        start.SignalAndWait();
        bool[] unlinked = new bool[calls.Length];
        for (int i = calls.Length - 1; i >= 0; i--)
        {
            unlinked[i] = slots.TryUnlink(calls[i]);
        }

        await running.WaitAsync(Infrastructure.TestHost.Patience);
        return unlinked;
    }
}
