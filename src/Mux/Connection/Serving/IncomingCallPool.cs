namespace Mux.Connection;

/// <summary>
/// Finished calls of one connection, kept for reuse so that a request allocates no call object in
/// steady state. A lock-free stack: calls are pushed by whichever thread finishes them and popped
/// only by the connection's reader loop, and with a single popper a stack has no ABA problem. It
/// never holds more calls than ran at once, so the connection's call cap bounds it.
/// </summary>
internal sealed class IncomingCallPool
{
    // The most recently returned call; each links to the next through NextPooled. Pushed with
    // CompareExchange by finishers, popped (CompareExchange) by the reader loop only.
    private IncomingCall? _top;

    /// <summary>A finished call to reuse, or null. Reader loop only.</summary>
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

    /// <summary>Keeps a call that has finished and that nothing refers to any more.</summary>
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
