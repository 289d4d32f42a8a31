namespace Mux.Tests.Fragments;

/// <summary>Serves <see cref="IUploadService"/> and counts what ran.</summary>
public sealed class UploadService : IUploadService
{
    private readonly TaskCompletionSource _release = new(TaskCreationOptions.RunContinuationsAsynchronously);
    private int _uploads;
    private int _adds;
    private int _holding;
    private int _holdsCanceled;

    /// <summary>How many Upload handlers ran.</summary>
    public int Uploads => Volatile.Read(ref _uploads);

    /// <summary>How many Add handlers ran.</summary>
    public int Adds => Volatile.Read(ref _adds);

    /// <summary>Hold handlers waiting now.</summary>
    public int Holding => Volatile.Read(ref _holding);

    /// <summary>Hold handlers that ended with their token.</summary>
    public int HoldsCanceled => Volatile.Read(ref _holdsCanceled);

    public void ReleaseHeldCalls() => _release.TrySetResult();

    public Task<int> Upload(byte[] data, CancellationToken cancellationToken = default)
    {
        Interlocked.Increment(ref _uploads);
        return Task.FromResult(data.Length);
    }

    public async Task<int> Hold(int value, CancellationToken cancellationToken = default)
    {
        Interlocked.Increment(ref _holding);
        try
        {
            await _release.Task.WaitAsync(cancellationToken);
        }
        catch (OperationCanceledException) when (cancellationToken.IsCancellationRequested)
        {
            Interlocked.Increment(ref _holdsCanceled);
            throw;
        }
        finally
        {
            Interlocked.Decrement(ref _holding);
        }

        return value;
    }

    public ValueTask<int> Add(int a, int b)
    {
        Interlocked.Increment(ref _adds);
        return ValueTask.FromResult(a + b);
    }
}
