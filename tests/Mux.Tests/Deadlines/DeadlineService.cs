namespace Mux.Tests.Deadlines;

/// <summary>Records what its handlers saw, for the tests to await.</summary>
public sealed class DeadlineService(IDeadlineService? nextHop = null) : IDeadlineService
{
    private readonly IDeadlineService? _nextHop = nextHop;
    private int _started;

    /// <summary>How many handlers started.</summary>
    public int Started => Volatile.Read(ref _started);

    /// <summary>Completes with the context of a WaitForDeadline call once it waits on its token.</summary>
    public TaskCompletionSource<MuxCallContext> Waiting { get; } = new(TaskCreationOptions.RunContinuationsAsynchronously);

    /// <summary>Completes with the context of a WaitForDeadline call once its token fired.</summary>
    public TaskCompletionSource<MuxCallContext> TokenFired { get; } = new(TaskCreationOptions.RunContinuationsAsynchronously);

    /// <summary>Completes with how the call to the next hop failed in NextHopWaitForDeadline.</summary>
    public TaskCompletionSource<Exception> NextHopFailure { get; } = new(TaskCreationOptions.RunContinuationsAsynchronously);

    public Task<long> RemainingMilliseconds(MuxCallContext? context = null)
    {
        Interlocked.Increment(ref _started);
        ArgumentNullException.ThrowIfNull(context);
        return Task.FromResult(context.RemainingTime is { } remaining ? (long)remaining.TotalMilliseconds : -1);
    }

    public async Task WaitForDeadline(MuxCallContext? context = null)
    {
        Interlocked.Increment(ref _started);
        ArgumentNullException.ThrowIfNull(context);

        // Take the token (which arms its deadline timer on the server's clock) before saying so:
        // a test that moves a fake clock once Waiting completes must find the timer armed.
        CancellationToken token = context.CancellationToken;
        Waiting.TrySetResult(context);
        try
        {
            await Task.Delay(TimeSpan.FromSeconds(30), token);
        }
        catch (OperationCanceledException)
        {
            TokenFired.TrySetResult(context);
            throw;
        }
    }

    public Task<long> NextHopRemainingMilliseconds()
    {
        Interlocked.Increment(ref _started);
        return NextHop.RemainingMilliseconds();
    }

    public async Task NextHopWaitForDeadline()
    {
        Interlocked.Increment(ref _started);
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
