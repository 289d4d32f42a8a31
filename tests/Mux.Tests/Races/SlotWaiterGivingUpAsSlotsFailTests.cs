using Mux.Connection;
using Mux.Tests.Infrastructure;

namespace Mux.Tests.Races;

/// <summary>
/// A caller waiting for a call slot that gives up (its token, its deadline) while the slots fail
/// (GoAway, the close) gives back no slot it never had. Fail takes the waiters off the list under
/// the lock and fails them after it; a waiter that gave up in between found itself off the list,
/// took that for a slot granted just as it gave up, and passed one on: the count of free slots
/// went one above what the connection had for each, on a connection still draining its calls.
/// </summary>
public sealed class SlotWaiterGivingUpAsSlotsFailTests
{
    private const int Rounds = 200;
    private const int Waiters = 64;

    [Fact]
    public async Task WaitersCancelledAsTheSlotsFail_GiveBackNoSlot()
    {
        var failure = new InvalidOperationException("The slots failed.");
        for (int round = 0; round < Rounds; round++)
        {
            var slots = new CallSlots(1);
            Assert.True(slots.TryTake()); // Held by a call in flight throughout.

            var tokens = new CancellationTokenSource[Waiters];
            var waits = new Task[Waiters];
            for (int i = 0; i < Waiters; i++)
            {
                tokens[i] = new CancellationTokenSource();
                waits[i] = slots.WaitAsync(Timeout.InfiniteTimeSpan, TimeProvider.System, tokens[i].Token).AsTask();
            }

            // The last waiters Fail reaches give up while it works down the list.
            await RunWhileGivingUpFromTheLast(() => slots.Fail(() => failure), tokens);
            foreach (Task wait in waits)
            {
                Exception error = await Assert.ThrowsAnyAsync<Exception>(() => wait.WaitAsync(TestHost.Patience));
                Assert.True(error is OperationCanceledException || ReferenceEquals(error, failure), $"Round {round}: {error}");
            }

            // No waiter got a slot; the one taken is still out.
            Assert.True(slots.Free == 0, $"Round {round}: {slots.Free} slots free, for none given back.");
            foreach (CancellationTokenSource token in tokens)
            {
                token.Dispose();
            }
        }
    }

    [Fact]
    public async Task WaitersCancelledAsTheSlotIsHandedOn_LoseNoSlot_AndMakeNone()
    {
        // The other side of the rule above: a waiter granted a slot just as it gave up still passes
        // that slot on. One slot goes from waiter to waiter (each gives it back as soon as it has
        // it) while the waiters give up from the last: at the end it is free, once.
        for (int round = 0; round < Rounds; round++)
        {
            var slots = new CallSlots(1);
            Assert.True(slots.TryTake());

            var tokens = new CancellationTokenSource[Waiters];
            var waits = new Task[Waiters];
            int served = 0;
            for (int i = 0; i < Waiters; i++)
            {
                tokens[i] = new CancellationTokenSource();
                waits[i] = slots.WaitAsync(Timeout.InfiniteTimeSpan, TimeProvider.System, tokens[i].Token).AsTask().ContinueWith(
                    wait =>
                    {
                        if (wait.IsCompletedSuccessfully)
                        {
                            Interlocked.Increment(ref served);
                            slots.Release();
                        }

                        return wait;
                    },
                    CancellationToken.None,
                    TaskContinuationOptions.ExecuteSynchronously,
                    TaskScheduler.Default).Unwrap();
            }

            await RunWhileGivingUpFromTheLast(() => slots.Release(), tokens);
            foreach (Task wait in waits)
            {
                try
                {
                    await wait.WaitAsync(TestHost.Patience);
                }
                catch (OperationCanceledException)
                {
                }
            }

            Assert.True(slots.Free == 1, $"Round {round}: {slots.Free} slots free, for the one given back ({served} waiters served).");
            foreach (CancellationTokenSource token in tokens)
            {
                token.Dispose();
            }
        }
    }

    // Runs act on a thread of its own, started at the moment this thread begins to cancel the
    // waiters' tokens from the last to the first, and waits for it to end.
    private static async Task RunWhileGivingUpFromTheLast(Action act, CancellationTokenSource[] tokens)
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
        for (int i = tokens.Length - 1; i >= 0; i--)
        {
            tokens[i].Cancel();
        }

        await running.WaitAsync(TestHost.Patience);
    }
}
