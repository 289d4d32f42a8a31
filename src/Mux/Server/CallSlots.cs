namespace Mux.Server;

/// <summary>
/// The calls a connection may run at once, counted without a lock: taking and returning a slot is
/// one interlocked operation each. Only when every slot is taken does the reader loop wait on a
/// semaphore, which a finishing call signals, handing its slot over directly.
/// </summary>
internal sealed class CallSlots
{
    // Free slots; below zero while the reader loop waits for one (it took a slot it did not
    // have). Changed with Interlocked by the reader loop (TryTake) and by finishing calls (Release).
    private int _free;

    // Counts slots handed to the waiting reader loop; used only when the connection is at its cap.
    // Never disposed: without AvailableWaitHandle a SemaphoreSlim holds nothing to release.
    private readonly SemaphoreSlim _handOff = new(0);

    public CallSlots(int slots)
    {
        _free = slots;
    }

    /// <summary>Takes a slot. When this returns false the slot is promised, not free: the caller
    /// must await <see cref="WaitAsync"/> before running the call.</summary>
    public bool TryTake() => Interlocked.Decrement(ref _free) >= 0;

    /// <summary>Waits until a finishing call hands over the slot <see cref="TryTake"/> promised.</summary>
    public Task WaitAsync(CancellationToken cancellationToken) => _handOff.WaitAsync(cancellationToken);

    /// <summary>Returns a slot, or hands it to the reader loop if it is waiting for one.</summary>
    public void Release()
    {
        if (Interlocked.Increment(ref _free) <= 0)
        {
            _handOff.Release();
        }
    }
}
