using System.Diagnostics.CodeAnalysis;
using Mux.Protocol;

namespace Mux.Streaming;

/// <summary>The producing end's credit for one stream: the producer takes one per item, the reader loop adds what StreamCredit
/// grants. Waiters resume on the thread pool (a SemaphoreSlim's async continuations), never on the reader loop.</summary>
internal sealed class StreamSendWindow
{
    // Taken by the producer; released by the reader loop (StreamCredit) and, once, by whoever opens the window.
    private readonly SemaphoreSlim _credit;

    // The credit granted while the window is closed (a caller's, until its Request is out whole), held so that no item can
    // overtake the Request. -1 once open. Interlocked.
    private long _held = -1;

    public StreamSendWindow(int initialCredit)
    {
        _credit = new SemaphoreSlim(initialCredit, int.MaxValue);
    }

    /// <summary>A window that holds no credit, whatever the peer grants, until <see cref="Open"/>.</summary>
    public static StreamSendWindow Closed() => new(0) { _held = 0 };

    /// <summary>Set before the window gets any credit (when the callee creates it, or when the caller registers the call),
    /// so a producer that holds credit can read it.</summary>
    public uint CallId { get; set; }

    /// <summary>ServerInitiated for a server's call, carried by the stream's frames. Set with <see cref="CallId"/>.</summary>
    public FrameFlags IdSpace { get; set; }

    public bool TryTake() => _credit.Wait(0);

    public Task WaitAsync(CancellationToken cancellationToken) => _credit.WaitAsync(cancellationToken);

    /// <summary>To a closed window, once it opens.</summary>
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

    /// <summary>Opens a <see cref="Closed"/> window, once, with the credit granted while it was closed. Never throws (the writer
    /// calls it): credit past what a window counts leaves it full.</summary>
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
