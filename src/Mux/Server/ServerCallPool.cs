namespace Mux.Server;

/// <summary>
/// Finished calls of one connection, kept for reuse so that a request allocates no call object in
/// steady state. A lock-free stack: calls are pushed by whichever thread finishes them and popped
/// only by the connection's reader loop, and with a single popper a stack has no ABA problem. It
/// never holds more calls than ran at once, so the connection's call cap bounds it.
/// </summary>
internal sealed class ServerCallPool
{
    // The most recently returned call; each links to the next through NextPooled. Pushed with
    // CompareExchange by finishers, popped (CompareExchange) by the reader loop only.
    private MuxServerCall? _top;

    /// <summary>A finished call to reuse, or null. Reader loop only.</summary>
    public MuxServerCall? TryRent()
    {
        while (true)
        {
            MuxServerCall? top = Volatile.Read(ref _top);
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
    public void Return(MuxServerCall call)
    {
        while (true)
        {
            MuxServerCall? top = Volatile.Read(ref _top);
            call.NextPooled = top;
            if (ReferenceEquals(Interlocked.CompareExchange(ref _top, call, top), top))
            {
                return;
            }
        }
    }
}
