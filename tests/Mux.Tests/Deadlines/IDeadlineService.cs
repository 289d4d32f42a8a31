namespace Mux.Tests.Deadlines;

/// <summary>What the deadline tests call: handlers that report the deadline they see, wait for it,
/// or pass it on to a next hop.</summary>
[MuxService]
public interface IDeadlineService
{
    /// <summary>The context's remaining time in milliseconds; -1 when the caller sent no deadline.</summary>
    Task<long> RemainingMilliseconds(MuxCallContext? context = null);

    /// <summary>Waits until its context's token fires (or 30 s), records it, then throws
    /// OperationCanceledException.</summary>
    Task WaitForDeadline(MuxCallContext? context = null);

    /// <summary>Returns the next hop's <see cref="RemainingMilliseconds"/>.</summary>
    Task<long> NextHopRemainingMilliseconds();

    /// <summary>Calls the next hop's <see cref="WaitForDeadline"/> (passing no token), records how
    /// that call failed, and rethrows.</summary>
    Task NextHopWaitForDeadline();
}
