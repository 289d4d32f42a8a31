namespace Mux.Tests.Deadlines;

/// <summary>Records the contexts its handlers got, for the tests to inspect.</summary>
public sealed class CallContextProbe : ICallContextProbe
{
    /// <summary>Completes with the context of a WaitOnContextToken call once its token fired.</summary>
    public TaskCompletionSource<MuxCallContext> TokenFired { get; } = new(TaskCreationOptions.RunContinuationsAsynchronously);

    /// <summary>Completes with the context of a WaitOnContextToken call once it started waiting.</summary>
    public TaskCompletionSource<MuxCallContext> Waiting { get; } = new(TaskCreationOptions.RunContinuationsAsynchronously);

    public Task<string> Describe(int value, MuxCallContext? context = null)
    {
        ArgumentNullException.ThrowIfNull(context);
        return Task.FromResult($"{value}|{context.MethodName}|{context.IsCallRunning}|{context.Deadline is not null}");
    }

    public async Task WaitOnContextToken(MuxCallContext? context = null, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(context);
        Waiting.TrySetResult(context);
        try
        {
            await Task.Delay(TimeSpan.FromSeconds(30), context.CancellationToken);
        }
        catch (OperationCanceledException)
        {
            TokenFired.TrySetResult(context);
            throw;
        }
    }

    public Task<long> RemainingMilliseconds(MuxCallContext? context = null)
    {
        ArgumentNullException.ThrowIfNull(context);
        return Task.FromResult(context.RemainingTime is { } remaining ? (long)remaining.TotalMilliseconds : -1);
    }
}
