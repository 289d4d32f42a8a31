namespace Mux.Server;

/// <summary>
/// The calls a connection may run at once, counted without a lock: taking and returning a slot is
/// one interlocked operation each. With every slot taken the reader loop does not wait: it refuses
/// the request (the client was told the limit in the handshake and should have waited), so it
/// keeps reading Cancel, Ping, GoAway and the end of the stream.
/// </summary>
internal sealed class CallSlots
{
    // Free slots, never negative. Decremented only by the reader loop (TryTake), incremented with
    // Interlocked by calls giving theirs back (Release).
    private int _free;

    public CallSlots(int slots)
    {
        _free = slots;
    }

    /// <summary>Takes a slot if one is free. Reader loop only: as the single taker it cannot lose
    /// a slot it saw to another thread.</summary>
    public bool TryTake()
    {
        if (Volatile.Read(ref _free) <= 0)
        {
            return false;
        }

        Interlocked.Decrement(ref _free);
        return true;
    }

    /// <summary>Returns a slot.</summary>
    public void Release() => Interlocked.Increment(ref _free);
}
