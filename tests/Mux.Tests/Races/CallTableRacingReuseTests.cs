using Mux.Connection;
using Mux.Tests.Infrastructure;

namespace Mux.Tests.Races;

/// <summary>
/// The pending table's scans (the expiry scan, GoAway's) and its removers by id against pooled calls that complete and
/// are reused under a later id while they look. Every look and take is made under the table's lock, and a scan's match
/// runs under it, so what another thread does to the table while a scan judges waits for the scan. These tests run the
/// answer, the reuse, the lookup and the close on such a thread, check that it waits, then that it finds the call as
/// the scan left it: a call with time left is never failed as expired, a reused call is never taken by a stale remover
/// nor hidden from the answer to its new id nor left in a closed table, and the count never reads low while a call is in.
/// </summary>
public sealed class CallTableRacingReuseTests
{
    // Ids 3 and 67 have the same low bits, as a pooled call's old and new ids often do.
    private const int Expected = 32;
    private const uint Slots = 64;
    private const long Now = 1_000;

    /// <summary>How long a thread started during a scan's match is given to come back: it never does (the match holds
    /// the table) unless the table let it through, so each test takes this long.</summary>
    private static readonly TimeSpan JudgingWindow = TimeSpan.FromMilliseconds(250);

    /// <summary>A pooled call as the scans see it: its id and its deadline, both changed when the
    /// object is reused.</summary>
    private sealed class Call(uint callId, long deadline) : ICallTableEntry
    {
        public uint CallId { get; set; } = callId;

        public long Deadline { get; set; } = deadline;
    }

    /// <summary>Runs a scan with <paramref name="rule"/> and, while its match judges <paramref name="judged"/>, starts
    /// <paramref name="meanwhile"/> on another thread; checks that it waits for the scan, and returns what the scan took
    /// and what <paramref name="meanwhile"/> returned.</summary>
    private static async Task<(List<Call>? Removed, T Seen)> WhileAScanJudges<T>(CallTable<Call> table, Call judged, Func<Call, bool> rule, Func<T> meanwhile)
    {
        Task<T>? running = null;
        bool cameBack = false;
        List<Call>? removed = null;
        table.RemoveWhere(rule, (call, selects) =>
        {
            if (ReferenceEquals(call, judged) && running is null)
            {
                running = Task.Factory.StartNew(meanwhile, CancellationToken.None, TaskCreationOptions.LongRunning, TaskScheduler.Default);
                cameBack = Task.WaitAny([running], JudgingWindow) == 0;
            }

            return selects(call);
        }, ref removed);

        Assert.NotNull(running);
        T seen = await running.WaitAsync(TestHost.Patience);
        Assert.False(cameBack, "Another thread went through the table while a scan's match held it.");
        return (removed, seen);
    }

    /// <summary>The answer to <paramref name="call"/>'s id takes it, and its caller's object is rented again for a
    /// later call; false when the answer found no call (another remover took it first).</summary>
    private static bool AnswerAndReuse(CallTable<Call> table, Call call, uint oldId, uint newId, long newDeadline)
    {
        if (!table.TryRemove(oldId, call))
        {
            return false;
        }

        call.CallId = newId;
        call.Deadline = newDeadline;
        Assert.True(table.TryAdd(call, out _));
        return true;
    }

    [Fact]
    public async Task ExpiryScan_DoesNotTakeACallWhoseObjectWasReusedForALaterCall_WhileItLooked()
    {
        // The answer to expired call 3 arrives while the scan judges it; had the answer taken the call, its object
        // would be reused for a call with a minute left. The lock-free table's scan could take that new call between
        // its look and its swap and fail it as timed out. The lock rules that window out: the answer waits, the scan
        // takes call 3 as it judged it, and the answer finds nothing, so call 3 completes once, by the scan.
        var table = new CallTable<Call>(Expected);
        var call = new Call(3, deadline: Now - 1);
        Assert.True(table.TryAdd(call, out _));

        (List<Call>? removed, bool answered) = await WhileAScanJudges(
            table, call, c => c.Deadline <= Now, () => AnswerAndReuse(table, call, 3, 3 + Slots, Now + 60_000));

        Assert.False(answered);
        Assert.Same(call, Assert.Single(removed!));
        Assert.Equal(3u, call.CallId);
        Assert.Equal(0, table.Count);

        // Its object reused after the scan failed it: the next scan leaves the new call, with its minute left.
        call.CallId = 3 + Slots;
        call.Deadline = Now + 60_000;
        Assert.True(table.TryAdd(call, out _));
        removed = null;
        table.RemoveWhere(Now, static (c, at) => c.Deadline <= at, ref removed);
        Assert.Null(removed);
        Assert.Same(call, table.Find(3 + Slots));
        Assert.Equal(1, table.Count);
    }

    [Fact]
    public async Task AnAnswerToAReusedCall_ThatArrivesWhileAScanJudges_FindsIt()
    {
        // Call 3 is answered and its object reused for call 67, whose answer comes at once, all while the expiry scan
        // judges the call. The lock-free table could leave the slot empty while its scan held the call out: the reader
        // loop dropped the answer, and the call waited until its deadline, holding its call slot.
        var table = new CallTable<Call>(Expected);
        var call = new Call(3, deadline: Now + 60_000);
        Assert.True(table.TryAdd(call, out _));

        (List<Call>? removed, Call? answered) = await WhileAScanJudges(table, call, c => c.Deadline <= Now, () =>
        {
            Assert.True(AnswerAndReuse(table, call, 3, 3 + Slots, Now + 60_000));
            return table.TryRemove(3 + Slots);
        });

        Assert.Null(removed);
        Assert.Same(call, answered);
        Assert.Equal(3 + Slots, call.CallId);
        Assert.Equal(0, table.Count);
    }

    [Fact]
    public async Task AClose_WhileAScanJudgesAReusedCall_StillTakesIt()
    {
        // The close comes right after the reuse, while the scan judges the call. The lock-free table's close could
        // find the slot empty while the scan held the call out, and the scan put it back into the closed table, where
        // nothing would ever fail it.
        var table = new CallTable<Call>(Expected);
        var call = new Call(3, deadline: Now + 60_000);
        Assert.True(table.TryAdd(call, out _));

        (List<Call>? removed, List<Call> closed) = await WhileAScanJudges(table, call, c => c.Deadline <= Now, () =>
        {
            Assert.True(AnswerAndReuse(table, call, 3, 3 + Slots, Now + 60_000));
            var calls = new List<Call>();
            table.Close(calls);
            return calls;
        });

        Assert.Null(removed);
        Assert.Same(call, Assert.Single(closed));
        Assert.Equal(3 + Slots, call.CallId);
        Assert.Null(table.Find(3 + Slots));
        Assert.Equal(0, table.Count);
    }

    [Fact]
    public async Task ARemoverByAStaleId_NeverHidesAReusedCall_FromALookupOfItsNewId()
    {
        // A stale remover of call 3 (its Cancel, say) races with lookups of call 67, which reused its object. The
        // lock-free table read the call's id, then took the call out to check it again and put it back, and a lookup
        // in between missed it. The table no longer reads an id to remove by it (the look and the take are one step
        // under its lock), so no hook can place a reuse there: the stale remover and the lookups, started while a
        // scan judges the call, wait for it, then never take nor miss call 67.
        var table = new CallTable<Call>(Expected);
        var call = new Call(3, deadline: Now + 60_000);
        Assert.True(table.TryAdd(call, out _));
        Assert.True(AnswerAndReuse(table, call, 3, 3 + Slots, Now + 60_000));

        const int Rounds = 10_000;
        (List<Call>? removed, (int taken, int missed)) = await WhileAScanJudges(table, call, c => c.Deadline <= Now, () =>
        {
            int stale = 0;
            int misses = 0;
            Parallel.Invoke(
                () =>
                {
                    for (int i = 0; i < Rounds; i++)
                    {
                        stale += (i % 2 == 0 ? table.TryRemove(3, call) : table.TryRemove(3) is not null) ? 1 : 0;
                    }
                },
                () =>
                {
                    for (int i = 0; i < Rounds; i++)
                    {
                        misses += table.Find(3 + Slots) is null ? 1 : 0;
                    }
                });
            return (stale, misses);
        });

        Assert.Null(removed);
        Assert.Equal(0, taken);
        Assert.Equal(0, missed);
        Assert.Same(call, table.TryRemove(3 + Slots));
        Assert.Equal(0, table.Count);
    }

    [Fact]
    public async Task AnAnswerRacingAStaleRemoverOfItsReusedCall_StillTakesTheCall()
    {
        // Call 3 is answered and its object reused for call 67; a stale remover of call 3 and the answer to call 67
        // then race. The lock-free table's answer could lose its swap to the stale remover, which was about to put the
        // call back, and give up: the answer was dropped and call 67 waited until its deadline. With the look and the
        // take one step under the lock there is no swap to lose: the two, started while a scan judges the call, wait
        // for it, then the stale remover takes nothing and the answer takes the call.
        var table = new CallTable<Call>(Expected);
        var call = new Call(3, deadline: Now + 60_000);
        Assert.True(table.TryAdd(call, out _));

        (List<Call>? removed, (bool stale, Call? answered)) = await WhileAScanJudges(table, call, c => c.Deadline <= Now, () =>
        {
            Assert.True(AnswerAndReuse(table, call, 3, 3 + Slots, Now + 60_000));
            bool staleTook = false;
            Call? answer = null;
            Parallel.Invoke(() => staleTook = table.TryRemove(3, call), () => answer = table.TryRemove(3 + Slots));
            return (staleTook, answer);
        });

        Assert.Null(removed);
        Assert.False(stale);
        Assert.Same(call, answered);
        Assert.Null(table.Find(3 + Slots));
        Assert.Equal(0, table.Count);
    }

    [Fact]
    public async Task GoAwayScan_StillTakesAReusedCall_ThatItsRuleSelectsUnderItsNewId()
    {
        // GoAway's line is call 2: the peer serves no call above it. A call reused under a new id above the line
        // before the scan is taken under that id.
        var table = new CallTable<Call>(Expected);
        var call = new Call(3, deadline: 0);
        Assert.True(table.TryAdd(call, out _));
        Assert.True(AnswerAndReuse(table, call, 3, 3 + Slots, 0));
        List<Call>? removed = null;
        table.RemoveWhere(2u, static (c, last) => c.CallId > last, ref removed);
        Assert.Same(call, Assert.Single(removed!));
        Assert.Equal(3 + Slots, call.CallId);
        Assert.Equal(0, table.Count);

        // The lock-free table's scan could see the call reused between its look and its swap; here the answer that
        // would free the object for reuse waits for the scan, which takes the call as it judged it. Either way no call
        // above the line stays in the table.
        call.CallId = 3;
        Assert.True(table.TryAdd(call, out _));
        (removed, bool answered) = await WhileAScanJudges(table, call, c => c.CallId > 2, () => AnswerAndReuse(table, call, 3, 3 + Slots, 0));

        Assert.False(answered);
        Assert.Same(call, Assert.Single(removed!));
        Assert.Equal(3u, call.CallId);
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

                    // Take it as soon as it is in (the adder may not have returned yet).
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
