namespace Mux.Tests.Deadlines;

/// <summary>What the deadline tests call: handlers that report the deadline they see, wait for it,
/// or pass it on to a next hop.</summary>
[MuxService]
public interface IDeadlineService
{
    /// <summary>MuxCallContext.Current's remaining time in milliseconds; -1 when there is no context.</summary>
    Task<long> RemainingMilliseconds();

    /// <summary>Waits until its token fires (or 30 s), records it, then throws OperationCanceledException.</summary>
    Task WaitForDeadline(CancellationToken cancellationToken = default);

    /// <summary>Returns the next hop's <see cref="RemainingMilliseconds"/>.</summary>
    Task<long> NextHopRemainingMilliseconds();

    /// <summary>Calls the next hop's <see cref="WaitForDeadline"/> without passing a token, records
    /// how that call failed, and rethrows.</summary>
    Task NextHopWaitForDeadline();
}
