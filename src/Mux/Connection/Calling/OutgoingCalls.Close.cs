namespace Mux.Connection;

// The end of these calls' connection: the peer's GoAway (calls it will not run fail as safe to
// retry), this side stopping to send (a balanced client dropping the peer's instance), the drain
// after either, and the close that fails every call still waiting.
internal sealed partial class OutgoingCalls
{
    // Whether the peer sent GoAway (_goingAway is also set by StopSending). Written by the reader
    // loop before _goingAway, so whoever sees the peer's _goingAway sees this too.
    private volatile bool _peerWentAway;

    // Created by StopSending; completed once no call sent before it is left in the table. From then
    // on a call found in the table is one taking itself back unsent (StartCall saw _goingAway after
    // its add). Null until StopSending; completed by whoever finds the table empty.
    private TaskCompletionSource? _stoppedSending;

    /// <summary>After GoAway, once the last call the peer promised to serve has completed, the
    /// connection is told (a client then closes it); after <see cref="StopSending"/>, once the last
    /// call sent before it has, its task completes.</summary>
    private void NotifyIfDrainedAfterGoAway()
    {
        if (!_goingAway || _pending.Count != 0)
        {
            return;
        }

        // The count is summed stripe by stripe: a call that a caller adds and takes back meanwhile
        // can hide one still waiting. A look at every slot cannot miss a call that was in the table
        // before StopSending, and one added after this look sees _goingAway and takes itself back.
        if (_stoppedSending is { Task.IsCompleted: false } stopped && _pending.Snapshot().Count == 0)
        {
            stopped.TrySetResult();
        }

        if (_peerWentAway)
        {
            _connection.OnCallsDrainedAfterGoAway();
        }
    }

    /// <summary>
    /// This side sends no new call on the connection, as after the peer's GoAway though the peer did
    /// not send one (a balanced client dropped its instance): a call that has not entered the table
    /// yet, or that waits for a slot, fails as not sent (safe to send elsewhere), and the calls
    /// already sent are left to complete (by their own deadlines at the latest). The task completes
    /// once none of those is left; a close after that fails what it finds as never sent.
    /// </summary>
    public Task StopSending()
    {
        TaskCompletionSource stopped = new(TaskCreationOptions.RunContinuationsAsynchronously);
        if (Interlocked.CompareExchange(ref _stoppedSending, stopped, null) is { } earlier)
        {
            return earlier.Task;
        }

        _goingAway = true;
        Interlocked.MemoryBarrier(); // Pairs with StartCall's check after its table add, as OnGoAway's does.
        FailWaitingCalls(GoingAwayNotSent);
        NotifyIfDrainedAfterGoAway();
        return stopped.Task;
    }

    /// <summary>The peer sent GoAway: it serves the calls up to <paramref name="lastServedCallId"/>
    /// and none above, which fail as never run (safe to retry); no new call is sent. Reader loop.</summary>
    public void OnGoAway(uint lastServedCallId)
    {
        _peerWentAway = true;
        _goingAway = true;
        Interlocked.MemoryBarrier(); // Pairs with StartCall's check after its table add: see there.
        FailWaitingCalls(GoingAwayNotSent);
        List<PendingCall>? notServed = null;
        _pending.RemoveWhere(lastServedCallId, static (call, last) => call.CallId > last, ref notServed);
        foreach (PendingCall call in notServed ?? [])
        {
            call.CompleteWithException(MuxConnectionException.NotRun($"The Mux {_connection.PeerName} at {_connection.Name} is shutting down and did not run this call; it is safe to retry.", MuxCloseReason.GoAway, null));
        }

        NotifyIfDrainedAfterGoAway();
    }

    /// <summary>The failure of a call that was not sent because the connection closed with
    /// <paramref name="error"/>: safe to send again elsewhere, unless its client is closing for good
    /// (<see cref="LeftUnsentByClose"/>).</summary>
    private MuxConnectionException NotSent(MuxConnectionException error) =>
        LeftUnsentByClose?.Invoke() ?? MuxConnectionException.NotRun($"The call was not sent: {error.Message}", error.Reason, error.InnerException);

    /// <summary>The failure of a call not sent because no new call goes out on this connection: the
    /// peer sent GoAway, or this side stopped sending (<see cref="StopSending"/>).</summary>
    private MuxConnectionException GoingAwayNotSent() =>
        _peerWentAway
            ? MuxConnectionException.NotRun($"The Mux {_connection.PeerName} at {_connection.Name} is shutting down (it sent GoAway); the call was not sent.", MuxCloseReason.GoAway, null)
            : MuxConnectionException.NotRun($"This {_connection.SideName} no longer sends calls to the Mux {_connection.PeerName} at {_connection.Name} (it was removed from the instances calls go to); the call was not sent.", MuxCloseReason.LocalShutdown, null);

    /// <summary>The connection closed: every call still waiting fails with <paramref name="error"/>;
    /// calls still waiting for a slot were never sent, so they fail as safe to send again elsewhere,
    /// and so do the calls in the table once the drain after <see cref="StopSending"/> has ended
    /// (each of those is on its way back out unsent).</summary>
    public void FailAll(MuxConnectionException error)
    {
        Volatile.Read(ref _expiryTimer)?.Dispose();
        FailWaitingCalls(() => NotSent(error));
        var calls = new List<PendingCall>();
        _pending.Close(calls);
        MuxConnectionException failure = calls.Count != 0 && _stoppedSending is { Task.IsCompleted: true } ? NotSent(error) : error;
        foreach (PendingCall call in calls)
        {
            call.CompleteWithException(failure);
        }
    }
}
