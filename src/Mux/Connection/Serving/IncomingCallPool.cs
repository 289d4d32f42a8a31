namespace Mux.Connection;

/// <summary>Finished calls of one connection, so that a request allocates no call object in steady state. A lock-free stack:
/// pushed by whichever thread finishes a call, popped only by the reader loop, and with one popper a stack has no ABA
/// problem. It never holds more calls than ran at once.</summary>
internal sealed class IncomingCallPool
{
    // The last call returned, linked to the others through NextPooled. Pushed by finishers, popped by the reader loop only.
    private IncomingCall? _top;

    public IncomingCall? TryRent()
    {
        while (true)
        {
            IncomingCall? top = Volatile.Read(ref _top);
            if (top is null)
            {
                return null;
            }

            if (ReferenceEquals(Interlocked.CompareExchange(ref _top, top.NextPooled, top), top))
            {
                top.NextPooled = null;
                return top;
            }
        }
    }

    /// <summary>Keeps a finished call that nothing refers to any more.</summary>
    public void Return(IncomingCall call)
    {
        while (true)
        {
            IncomingCall? top = Volatile.Read(ref _top);
            call.NextPooled = top;
            if (ReferenceEquals(Interlocked.CompareExchange(ref _top, call, top), top))
            {
                return;
            }
        }
    }
}
