using System.Diagnostics.CodeAnalysis;
using Mux.Protocol;

namespace Mux.Streaming;

/// <summary>
/// The producing end's credit for one stream: how many more items the consumer on the other side
/// accepts. The producer takes one per item and waits (asynchronously, cancellably) when there is
/// none; the reader loop adds what each StreamCredit frame grants. Waiters resume on the thread
/// pool (SemaphoreSlim's async waiters run their continuations asynchronously), never on the
/// reader loop.
/// </summary>
internal sealed class StreamSendWindow
{
    // The credit left. Taken by the producer; released by the reader loop (StreamCredit) and,
    // once, by whoever opens the window.
    private readonly SemaphoreSlim _credit;

    // The credit granted while the window is closed, a client's until its Request is out whole
    // (Open): its window, and StreamCredit that crossed a Request in fragments, held here so that
    // no item can overtake the Request. -1 once open. Interlocked.
    private long _held = -1;

    /// <summary>Creates a window holding <paramref name="initialCredit"/> items of credit.</summary>
    public StreamSendWindow(int initialCredit)
    {
        _credit = new SemaphoreSlim(initialCredit, int.MaxValue);
    }

    /// <summary>A window that holds no credit, whatever the peer grants, until <see cref="Open"/>.</summary>
    public static StreamSendWindow Closed() => new(0) { _held = 0 };

    /// <summary>The call whose stream this is. Set before the window gets any credit (when the
    /// server creates it, or when the client registers the call, before its Request goes out), so
    /// a producer that holds credit can read it.</summary>
    public uint CallId { get; set; }

    /// <summary>The id space of the call (ServerInitiated for a server's call), which its stream's
    /// frames carry. Set with <see cref="CallId"/>.</summary>
    public FrameFlags IdSpace { get; set; }

    /// <summary>Takes one item's credit if there is any, without waiting.</summary>
    public bool TryTake() => _credit.Wait(0);

    /// <summary>Takes one item's credit, waiting for the consumer to grant more if there is none.</summary>
    public Task WaitAsync(CancellationToken cancellationToken) => _credit.WaitAsync(cancellationToken);

    /// <summary>Adds the credit a StreamCredit frame grants (to a closed window: once it opens).</summary>
    /// <exception cref="MuxProtocolException">The peer granted an impossible amount.</exception>
    public void Grant(uint count)
    {
        if (count == 0)
        {
            return;
        }

        if (count > int.MaxValue)
        {
            ThrowTooMuchCredit(count);
        }

        for (long held = Volatile.Read(ref _held); held >= 0; held = Volatile.Read(ref _held))
        {
            if (Interlocked.CompareExchange(ref _held, held + count, held) == held)
            {
                return;
            }
        }

        try
        {
            _credit.Release((int)count);
        }
        catch (SemaphoreFullException)
        {
            ThrowTooMuchCredit(count);
        }
    }

    /// <summary>Opens a <see cref="Closed"/> window, once, with the credit granted while it was
    /// closed (the peer's window first). Never throws (the connection's writer calls it): credit
    /// past what a window counts leaves it full.</summary>
    public void Open()
    {
        long credit = Interlocked.Exchange(ref _held, -1);
        try
        {
            _credit.Release((int)Math.Min(credit, int.MaxValue));
        }
        catch (SemaphoreFullException)
        {
            // A StreamCredit frame that came once it was open released its credit first.
        }
    }

    [DoesNotReturn]
    private static void ThrowTooMuchCredit(uint count) =>
        throw new MuxProtocolException($"The peer granted {count} more stream items than a stream can hold.");
}
