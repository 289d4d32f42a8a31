namespace Mux.Tests.Infrastructure;

/// <summary>The server side of <see cref="ITestService"/>, with hooks a test can observe and release.</summary>
public sealed class TestService : ITestService
{
    private readonly ManualResetEventSlim _blockGate = new(false);
    private readonly TaskCompletionSource _hangRelease = new(TaskCreationOptions.RunContinuationsAsynchronously);
    private int _blockedNow;
    private int _hanging;
    private int _waitingForCancellation;

    /// <summary>Completes when a WaitForCancellation handler saw its token cancelled.</summary>
    public TaskCompletionSource CancellationObserved { get; } = new(TaskCreationOptions.RunContinuationsAsynchronously);

    /// <summary>Completes when the first Block handler is blocking its thread.</summary>
    public TaskCompletionSource BlockStarted { get; } = new(TaskCreationOptions.RunContinuationsAsynchronously);

    /// <summary>Completes when a WaitForCancellation handler started.</summary>
    public TaskCompletionSource WaitStarted { get; } = new(TaskCreationOptions.RunContinuationsAsynchronously);

    public int HangingCalls => Volatile.Read(ref _hanging);

    public int BlockedNow => Volatile.Read(ref _blockedNow);

    /// <summary>WaitForCancellation handlers running now.</summary>
    public int WaitingForCancellationNow => Volatile.Read(ref _waitingForCancellation);

    public void OpenBlockGate() => _blockGate.Set();

    public void ReleaseHangingCalls() => _hangRelease.TrySetResult();

    public ValueTask<int> Add(int a, int b) => new(a + b);

    public Task<string> Echo(string text, CancellationToken cancellationToken = default) => Task.FromResult(text);

    public async Task<int> Delay(int milliseconds, int value)
    {
        await Task.Delay(milliseconds);
        return value;
    }

    public Task Throw(string message) => throw new InvalidOperationException(message);

    public Task<int> Block(int id)
    {
        Interlocked.Increment(ref _blockedNow);
        BlockStarted.TrySetResult();
        _blockGate.Wait(TimeSpan.FromSeconds(10)); // Deliberately blocks a pool thread: that is the scenario.
        Interlocked.Decrement(ref _blockedNow);
        return Task.FromResult(id);
    }

    public async Task WaitForCancellation(CancellationToken cancellationToken = default)
    {
        WaitStarted.TrySetResult();
        Interlocked.Increment(ref _waitingForCancellation);
        try
        {
            await Task.Delay(TimeSpan.FromSeconds(30), cancellationToken);
        }
        catch (OperationCanceledException)
        {
            CancellationObserved.TrySetResult();
            throw;
        }
        finally
        {
            Interlocked.Decrement(ref _waitingForCancellation);
        }
    }

    public async Task<int> Hang(int id)
    {
        Interlocked.Increment(ref _hanging);
        await _hangRelease.Task.WaitAsync(TimeSpan.FromSeconds(30));
        return id;
    }

    public Task<byte[]> Bytes(int size) => Task.FromResult(new byte[size]);
}
