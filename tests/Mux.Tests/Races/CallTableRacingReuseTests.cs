using System.Collections.Concurrent;
using Mux.Connection;
using Mux.Tests.Infrastructure;

namespace Mux.Tests.Races;

/// <summary>
/// The pending table's scans (the expiry scan, GoAway's) against the calls that come and go while
/// they look. A scan decides on a call it read from a slot, then takes it out by compare-and-swap;
/// the call objects are pooled, so between the two the call may have completed and its object been
/// reused for a later call whose id maps to the same slot: the swap then succeeds on a call the
/// scan never judged (an expiry scan failed a call with time left as timed out). And a call is
/// counted when it is added: counted only after it was published, a scan could take it and
/// uncount it first, and the count read right after (the drain check after GoAway) came out one
/// short, so a client closed a connection a call still waited on. And a remover (a scan, or one by
/// id) that took out such a reused call put it back only after its second check: until then a
/// lookup of the new call's id found nothing (its answer was dropped), and a close missed it.
/// </summary>
public sealed class CallTableRacingReuseTests
{
    // 32 expected calls make 64 slots: ids 3 and 67 share slot 3.
    private const int Expected = 32;
    private const uint Slots = 64;

    /// <summary>A pooled call as the scans see it: its id and its deadline, both changed when the
    /// object is reused.</summary>
    private sealed class Call(uint callId, long deadline) : ICallTableEntry
    {
        public uint CallId { get; set; } = callId;

        public long Deadline { get; set; } = deadline;
    }

    [Fact]
    public void ExpiryScan_DoesNotTakeACallWhoseObjectWasReusedForALaterCall_WhileItLooked()
    {
        const long now = 1_000;
        var table = new CallTable<Call>(Expected);
        var expired = new Call(3, deadline: now - 1);
        Assert.True(table.TryAdd(expired, out _));

        // The scan reads the expired call's deadline; right after (before its swap) the answer takes
        // the call, its caller returns the object to the pool, and a new call with time left rents it
        // and is added under an id of the same slot. Done inside the predicate: that is exactly the
        // window between the scan's look and its swap.
        bool reused = false;
        List<Call>? removed = null;
        table.RemoveWhere(now, (call, at) =>
        {
            bool match = call.Deadline <= at;
            if (!reused)
            {
                reused = true;
                Assert.True(table.TryRemove(call.CallId, call));
                call.CallId = 3 + Slots;
                call.Deadline = now + 60_000;
                Assert.True(table.TryAdd(call, out _));
            }

            return match;
        }, ref removed);

        Assert.True(reused);
        Assert.Null(removed); // Before: the new call, with a minute left, was failed as timed out.
        Assert.Same(expired, table.Find(3 + Slots));
        Assert.Equal(1, table.Count);
    }

    /// <summary>How long the scan's second ask gives a look from another thread to come back. A
    /// look that does not wait for the scan's verdict comes back at once; one that does never comes
    /// back within it, so each test takes this long (and passes whatever the machine's speed).</summary>
    private static readonly TimeSpan JudgingWindow = TimeSpan.FromMilliseconds(250);

    /// <summary>Runs an expiry scan over an expired call whose object, between the scan's look and
    /// its swap, is reused for a later call of the same slot with time left (as the first test), and
    /// starts <paramref name="look"/> on another thread during the scan's second ask: while the call
    /// is out of its slot and the scan has not yet put it back.</summary>
    private static async Task<(Call Call, T Seen)> LookWhileTheScanJudgesAReusedCall<T>(CallTable<Call> table, Func<T> look)
    {
        const long now = 1_000;
        var call = new Call(3, deadline: now - 1);
        Assert.True(table.TryAdd(call, out _));
        int asked = 0;
        Task<T>? looking = null;
        List<Call>? removed = null;
        table.RemoveWhere(now, (c, at) =>
        {
            if (++asked == 1)
            {
                bool expired = c.Deadline <= at;
                Assert.True(table.TryRemove(c.CallId, c));
                c.CallId = 3 + Slots;
                c.Deadline = now + 60_000;
                Assert.True(table.TryAdd(c, out _));
                return expired;
            }

            looking = Task.Factory.StartNew(look, CancellationToken.None, TaskCreationOptions.LongRunning, TaskScheduler.Default);
            looking.Wait(JudgingWindow);
            return c.Deadline <= at;
        }, ref removed);

        Assert.Equal(2, asked);
        Assert.Null(removed);
        Assert.NotNull(looking);
        return (call, await looking.WaitAsync(TestHost.Patience));
    }

    [Fact]
    public async Task AnAnswerToAReusedCall_ThatArrivesWhileAScanPutsItBack_FindsIt()
    {
        // The reader loop takes the call its answer names while the scan holds that call out of
        // its slot. Before: it found the slot empty, dropped the answer, and the call waited
        // until its deadline (forever without one), holding its call slot.
        var table = new CallTable<Call>(Expected);
        (Call call, Call? answered) = await LookWhileTheScanJudgesAReusedCall(table, () => table.TryRemove(3 + Slots));

        Assert.Same(call, answered);
        Assert.Equal(0, table.Count);
    }

    [Fact]
    public async Task AClose_WhileAScanPutsBackAReusedCall_StillTakesIt()
    {
        // Before: the close found the slot empty, then the scan put the call back into the closed
        // table, where nothing would ever fail it.
        var table = new CallTable<Call>(Expected);
        (Call call, List<Call> closed) = await LookWhileTheScanJudgesAReusedCall(table, () =>
        {
            var calls = new List<Call>();
            table.Close(calls);
            return calls;
        });

        Assert.Same(call, Assert.Single(closed));
        Assert.Null(table.Find(3 + Slots));
        Assert.Equal(0, table.Count);
    }

    /// <summary>A pooled call whose id, read once by the table, runs <see cref="OnRead"/> (once)
    /// between reading its field and returning it: a step of another thread that lands exactly
    /// after the table's read.</summary>
    private sealed class ReadHookedCall(uint callId) : ICallTableEntry
    {
        public uint Id { get; set; } = callId;

        public Action? OnRead { get; set; }

        public uint CallId
        {
            get
            {
                uint id = Id;
                Action? onRead = OnRead;
                OnRead = null;
                onRead?.Invoke();
                return id;
            }
        }
    }

    [Fact]
    public async Task ARemoverById_ThatTakesOutAReusedCall_NeverHidesItFromALookupOfItsNewId()
    {
        // A remover by id (a Cancel, say) reads the call's id; right after, the call's answer
        // takes it, and its object is reused for a later call of the same slot; the remover's
        // swap then takes that call out, and its second id check sees the new id. While it
        // checks, the new call's answer arrives on the reader loop's thread. Before: the slot read
        // empty, the answer was dropped, and the call waited until its deadline, or forever.
        var table = new CallTable<ReadHookedCall>(Expected);
        var call = new ReadHookedCall(3);
        Assert.True(table.TryAdd(call, out _));
        Task<ReadHookedCall?>? answered = null;
        call.OnRead = () =>
        {
            Assert.True(table.TryRemove(3, call));
            call.Id = 3 + Slots;
            Assert.True(table.TryAdd(call, out _));
            call.OnRead = () =>
            {
                answered = Task.Factory.StartNew(() => table.TryRemove(3 + Slots), CancellationToken.None, TaskCreationOptions.LongRunning, TaskScheduler.Default);
                answered.Wait(JudgingWindow);
            };
        };

        Assert.False(table.TryRemove(3, call));

        Assert.NotNull(answered);
        Assert.Same(call, await answered.WaitAsync(TestHost.Patience));
        Assert.Equal(0, table.Count);
    }

    /// <summary>A pooled call whose id, read by the table on a thread given steps (<see cref="OnRead"/>),
    /// runs that thread's next step right after the read: a step of another thread that lands
    /// exactly between this thread's read and what it does next. A read made while a step runs (on
    /// that thread), or on a thread without steps, runs nothing.</summary>
    private sealed class ThreadHookedCall(uint callId) : ICallTableEntry
    {
        [ThreadStatic]
        private static bool t_inStep;

        private readonly ConcurrentDictionary<Thread, Queue<Action>> _steps = new();

        public uint Id { get; set; } = callId;

        /// <summary>Steps for the calling thread's next reads; only that thread takes them.</summary>
        public void OnReadHere(params Action[] steps) => _steps[Thread.CurrentThread] = new Queue<Action>(steps);

        public uint CallId
        {
            get
            {
                uint id = Id;
                if (!t_inStep && _steps.TryGetValue(Thread.CurrentThread, out Queue<Action>? steps) && steps.TryDequeue(out Action? step))
                {
                    t_inStep = true;
                    try
                    {
                        step();
                    }
                    finally
                    {
                        t_inStep = false;
                    }
                }

                return id;
            }
        }
    }

    [Fact]
    public async Task AnAnswerWhoseSwapLosesToAStaleRemoverThatPutsItsCallBack_StillTakesTheCall()
    {
        // A stale remover of call 3 (its Cancel, say) reads the call's id; right after, call 3's
        // answer takes it and its object is reused for call 67, of the same slot. Call 67's answer
        // reads the call and checks its id; then the stale remover's swap takes the call out (the
        // same object: it cannot tell), and the answer's swap fails against its mark. The stale
        // remover's second check sees 67 and puts the call back. Before: the answer gave up on its
        // lost swap, so it was dropped, and call 67 stayed in the table with its answer spent: it
        // waited until its deadline (forever without one), holding its call slot.
        var table = new CallTable<ThreadHookedCall>(Expected);
        var call = new ThreadHookedCall(3);
        Assert.True(table.TryAdd(call, out _));
        using var answerChecked = new ManualResetEventSlim();
        using var staleSwapped = new ManualResetEventSlim();
        Task<ThreadHookedCall?>? answer = null;
        call.OnReadHere(
            () =>
            {
                // The stale remover has read id 3. Call 3 is answered, and its object reused for 67.
                Assert.True(table.TryRemove(3, call));
                call.Id = 3 + Slots;
                Assert.True(table.TryAdd(call, out _));
                answer = Task.Factory.StartNew(
                    () =>
                    {
                        // The answer to 67 has read the call and checked its id: the stale swap comes now.
                        call.OnReadHere(() =>
                        {
                            answerChecked.Set();
                            staleSwapped.Wait(TestHost.Patience);
                        });
                        return table.TryRemove(3 + Slots);
                    },
                    CancellationToken.None,
                    TaskCreationOptions.LongRunning,
                    TaskScheduler.Default);
                Assert.True(answerChecked.Wait(TestHost.Patience), "The answer never read the call.");
            },
            () =>
            {
                // The stale remover's swap took the call out; its second check reads 67. The answer
                // swaps now, and has the judging window to come back before the call is put back.
                staleSwapped.Set();
                answer!.Wait(JudgingWindow);
            });

        Assert.False(table.TryRemove(3, call));

        Assert.NotNull(answer);
        ThreadHookedCall? answered = await answer.WaitAsync(TestHost.Patience);
        Assert.Same(call, answered);
        Assert.Null(table.Find(3 + Slots));
        Assert.Equal(0, table.Count);
    }

    [Fact]
    public void GoAwayScan_StillTakesAReusedCall_ThatItsRuleSelectsUnderItsNewId()
    {
        var table = new CallTable<Call>(Expected);
        var call = new Call(3, deadline: 0);
        Assert.True(table.TryAdd(call, out _));

        bool reused = false;
        List<Call>? removed = null;
        table.RemoveWhere(2u, (c, last) =>
        {
            bool match = c.CallId > last;
            if (!reused)
            {
                reused = true;
                Assert.True(table.TryRemove(c.CallId, c));
                c.CallId = 3 + Slots; // Above the line too: the peer will not serve it either.
                Assert.True(table.TryAdd(c, out _));
            }

            return match;
        }, ref removed);

        Assert.NotNull(removed);
        Assert.Same(call, Assert.Single(removed));
        Assert.Equal(3 + Slots, call.CallId);
        Assert.Null(table.Find(3 + Slots));
        Assert.Equal(0, table.Count);
    }

    [Fact]
    public async Task ACallTakenByAScanAsItIsAdded_NeverMakesTheCountReadLow()
    {
        // One call stays in the table throughout (a call the peer serves after GoAway); another
        // thread adds calls one at a time, and a scan takes each as soon as it can see it, then
        // reads the count, as OnGoAway does for its drain check. The count must never read 0
        // while the call that stays is in.
        const int Rounds = 20_000;
        var table = new CallTable<Call>(Expected);
        Assert.True(table.TryAdd(new Call(1, 0), out _));
        var added = new SemaphoreSlim(0);
        var taken = new SemaphoreSlim(0);
        long low = 0;
        Task adder = Task.Factory.StartNew(
            () =>
            {
                for (uint i = 0; i < Rounds; i++)
                {
                    Assert.True(table.TryAdd(new Call(2 + (i % (Slots - 2)), 0), out _));
                    added.Release();
                    taken.Wait();
                }
            },
            CancellationToken.None,
            TaskCreationOptions.LongRunning,
            TaskScheduler.Default);
        Task scanner = Task.Factory.StartNew(
            () =>
            {
                for (uint i = 0; i < Rounds; i++)
                {
                    uint id = 2 + (i % (Slots - 2));

                    // Take it as soon as it is in its slot (the adder may not have returned yet).
                    List<Call>? removed = null;
                    while (removed is null)
                    {
                        table.RemoveWhere(id, static (call, id) => call.CallId == id, ref removed);
                    }

                    if (table.Count < 1)
                    {
                        Interlocked.Increment(ref low);
                    }

                    // The adder's count has landed by now; the two wait for each other every round.
                    added.Wait();
                    taken.Release();
                }
            },
            CancellationToken.None,
            TaskCreationOptions.LongRunning,
            TaskScheduler.Default);

        await Task.WhenAll(adder, scanner).WaitAsync(TestHost.Patience * 4);
        Assert.Equal(0, Interlocked.Read(ref low));
        Assert.Equal(1, table.Count);
    }
}
