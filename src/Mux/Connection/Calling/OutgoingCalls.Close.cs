namespace Mux.Connection;

// The end of these calls' connection: the peer's GoAway (calls it will not run fail as safe to
// retry), the drain after it, and the close that fails every call still waiting.
internal sealed partial class OutgoingCalls
{
    /// <summary>After GoAway, once the last call the peer promised to serve has completed, the
    /// connection is told (a client then closes it).</summary>
    private void NotifyIfDrainedAfterGoAway()
    {
        if (_goingAway && _pending.Count == 0)
        {
            _connection.OnCallsDrainedAfterGoAway();
        }
    }

    /// <summary>The peer sent GoAway: it serves the calls up to <paramref name="lastServedCallId"/>
    /// and none above, which fail as never run (safe to retry); no new call is sent. Reader loop.</summary>
    public void OnGoAway(uint lastServedCallId)
    {
        _goingAway = true;
        Interlocked.MemoryBarrier(); // Pairs with StartCall's check after its table add: see there.
        _slots.Fail(GoingAwayNotSent);
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

    private MuxConnectionException GoingAwayNotSent() =>
        MuxConnectionException.NotRun($"The Mux {_connection.PeerName} at {_connection.Name} is shutting down (it sent GoAway); the call was not sent.", MuxCloseReason.GoAway, null);

    /// <summary>The connection closed: every call still waiting fails with <paramref name="error"/>;
    /// calls still waiting for a slot were never sent, so they fail as safe to send again elsewhere.</summary>
    public void FailAll(MuxConnectionException error)
    {
        Volatile.Read(ref _expiryTimer)?.Dispose();
        _slots.Fail(() => NotSent(error));
        var calls = new List<PendingCall>();
        _pending.Close(calls);
        foreach (PendingCall call in calls)
        {
            call.CompleteWithException(error);
        }
    }
}
