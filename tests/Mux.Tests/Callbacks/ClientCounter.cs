namespace Mux.Tests.Callbacks;

/// <summary>A client's <see cref="IClientCounter"/>; records how its server streams ended.</summary>
public sealed class ClientCounter : IClientCounter
{
    // Completed when a Count producer is stopped by its token (the server stopped reading): the
    // producer is then disposed with its token cancelled.
    private readonly TaskCompletionSource _countCancelled = new(TaskCreationOptions.RunContinuationsAsynchronously);

    /// <summary>Completes once a <see cref="Count"/> producer was stopped by its token.</summary>
    public Task CountCancelled => _countCancelled.Task;

    public async IAsyncEnumerable<int> Count(int count, [System.Runtime.CompilerServices.EnumeratorCancellation] CancellationToken cancellationToken = default)
    {
        try
        {
            for (int i = 1; i <= count; i++)
            {
                cancellationToken.ThrowIfCancellationRequested();
                await Task.Yield();
                yield return i;
            }
        }
        finally
        {
            if (cancellationToken.IsCancellationRequested)
            {
                _countCancelled.TrySetResult();
            }
        }
    }

    public async Task<int> Sum(IAsyncEnumerable<int> values)
    {
        int sum = 0;
        await foreach (int value in values)
        {
            sum += value;
        }

        return sum;
    }

    public async IAsyncEnumerable<int> Scale(int factor, IAsyncEnumerable<int> values)
    {
        await foreach (int value in values)
        {
            yield return value * factor;
        }
    }
}
