namespace Mux.Tests.Deadlines;

/// <summary>Records what its handlers saw, for the tests to await.</summary>
public sealed class DeadlineService(IDeadlineService? nextHop = null) : IDeadlineService
{
    private readonly IDeadlineService? _nextHop = nextHop;

    /// <summary>Completes when a WaitForDeadline handler's token fired, with the handler context's
    /// remaining time at that moment (null when the handler had no context).</summary>
    public TaskCompletionSource<TimeSpan?> TokenFired { get; } = new(TaskCreationOptions.RunContinuationsAsynchronously);

    /// <summary>Completes with how the call to the next hop failed in NextHopWaitForDeadline.</summary>
    public TaskCompletionSource<Exception> NextHopFailure { get; } = new(TaskCreationOptions.RunContinuationsAsynchronously);

    public Task<long> RemainingMilliseconds() =>
        Task.FromResult(MuxCallContext.Current is { } context ? (long)context.RemainingTime.TotalMilliseconds : -1);

    public async Task WaitForDeadline(CancellationToken cancellationToken = default)
    {
        try
        {
            await Task.Delay(TimeSpan.FromSeconds(30), cancellationToken);
        }
        catch (OperationCanceledException)
        {
            TokenFired.TrySetResult(MuxCallContext.Current?.RemainingTime);
            throw;
        }
    }

    public Task<long> NextHopRemainingMilliseconds() => NextHop.RemainingMilliseconds();

    public async Task NextHopWaitForDeadline()
    {
        try
        {
            await NextHop.WaitForDeadline();
        }
        catch (Exception ex)
        {
            NextHopFailure.TrySetResult(ex);
            throw;
        }
    }

    private IDeadlineService NextHop => _nextHop ?? throw new InvalidOperationException("This service has no next hop.");
}
