using Mux.Connection;
using Mux.Tests.Infrastructure;

namespace Mux.Tests.Races;

/// <summary>
/// The pending table's scans (the expiry scan, GoAway's) against the calls that come and go while
/// they look. A scan decides on a call it read from a slot, then takes it out by compare-and-swap;
/// the call objects are pooled, so between the two the call may have completed and its object been
/// reused for a later call whose id maps to the same slot: the swap then succeeds on a call the
/// scan never judged (an expiry scan failed a call with time left as timed out).
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
}
