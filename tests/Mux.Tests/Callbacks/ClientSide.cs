namespace Mux.Tests.Callbacks;

/// <summary>A client's implementation: <see cref="Transform"/> answers value * 1000 + its own number.</summary>
public sealed class ClientSide(int number) : IClientSide
{
    private readonly TaskCompletionSource _release = new(TaskCreationOptions.RunContinuationsAsynchronously);

    /// <summary>Completed when a <see cref="Slow"/> call has started.</summary>
    public TaskCompletionSource<string> SlowStarted { get; } = new(TaskCreationOptions.RunContinuationsAsynchronously);

    /// <summary>Completed when a <see cref="Slow"/> call's token fired.</summary>
    public TaskCompletionSource<string> SlowCanceled { get; } = new(TaskCreationOptions.RunContinuationsAsynchronously);

    public int TransformCalls;

    public void ReleaseSlowCalls() => _release.TrySetResult();

    public Task<int> Transform(int value)
    {
        Interlocked.Increment(ref TransformCalls);
        return Task.FromResult(value * 1000 + number);
    }

    public async Task<string> Slow(string tag, CancellationToken cancellationToken)
    {
        SlowStarted.TrySetResult(tag);
        try
        {
            await _release.Task.WaitAsync(cancellationToken);
        }
        catch (OperationCanceledException) when (cancellationToken.IsCancellationRequested)
        {
            SlowCanceled.TrySetResult(tag);
            throw;
        }

        return "slow " + tag;
    }

    public ValueTask<string> Fast(string client) => ValueTask.FromResult($"fast {client} from {number}");

    public Task Fail() => throw new InvalidOperationException("secret client detail");
}
