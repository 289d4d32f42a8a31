namespace Mux.Connection;

// Outbound flow control: how many bytes may wait for the socket (MaxOutboundBytesPerConnection)
// and how those who must not add more wait for room. A peer that stops reading fills the queue; a
// server's reader loop then takes no more requests (TCP pushes back on the client), and a side's
// callers wait (within their deadlines) to queue their requests.
internal abstract partial class MuxConnection
{
    // Completed when the writer takes the queue (or the connection closes), waking everyone waiting
    // for room: the reader loop, or callers. Installed by the first waiter (CompareExchange);
    // completed and cleared by the writer, the close, or a waiter that finds room.
    private TaskCompletionSource? _outboundRoom;

    /// <summary>How many bytes may wait in the outbound queue before <see cref="IsOutboundFull"/>
    /// says so. Set by a subclass's constructor; unlimited by default.</summary>
    internal int MaxQueuedOutboundBytes { get; init; } = int.MaxValue;

    /// <summary>Whether the queue of frames waiting for the socket has reached
    /// <see cref="MaxQueuedOutboundBytes"/>: the peer is not reading what we send.</summary>
    internal bool IsOutboundFull => _queue.QueuedBytes >= MaxQueuedOutboundBytes;

    /// <summary>Completes when the outbound queue has room again (the writer took it, which it
    /// does only once the socket has accepted the previous batch) or the connection closed.</summary>
    internal Task WaitForOutboundRoomAsync()
    {
        TaskCompletionSource? room = Volatile.Read(ref _outboundRoom);
        if (room is null)
        {
            var created = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
            room = Interlocked.CompareExchange(ref _outboundRoom, created, null) ?? created;
        }

        Interlocked.MemoryBarrier(); // Publishing the waiter before the checks below: see SignalOutboundRoom.
        if (!IsOutboundFull || IsClosed)
        {
            SignalOutboundRoom(); // Completes ours (or a newer one, ours having been completed already).
        }

        return room.Task;
    }

    private void SignalOutboundRoom() => Interlocked.Exchange(ref _outboundRoom, null)?.TrySetResult();
}
