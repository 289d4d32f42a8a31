using System.Runtime.CompilerServices;

namespace Mux.Tests.Streaming;

/// <summary>The server side of <see cref="IStreamService"/>, recording what the tests check.</summary>
public sealed class StreamService : IStreamService
{
    /// <summary>Completed when Forever's token fires.</summary>
    public TaskCompletionSource ForeverCanceled { get; } = new(TaskCreationOptions.RunContinuationsAsynchronously);

    /// <summary>Completed with the exception Drain's reading ended with (null when the stream completed).</summary>
    public TaskCompletionSource<Exception?> DrainEnded { get; } = new(TaskCreationOptions.RunContinuationsAsynchronously);

    /// <summary>How many items Drain has read.</summary>
    public int DrainCount => Volatile.Read(ref _drainCount);

    private int _drainCount;

    public async IAsyncEnumerable<int> Range(int start, int count, [EnumeratorCancellation] CancellationToken cancellationToken = default)
    {
        for (int i = 0; i < count; i++)
        {
            cancellationToken.ThrowIfCancellationRequested();
            yield return start + i;
        }

        await Task.CompletedTask;
    }

    public async IAsyncEnumerable<byte[]> Blobs(int count, int size)
    {
        for (int i = 0; i < count; i++)
        {
            byte[] blob = new byte[size];
            Array.Fill(blob, (byte)i);
            yield return blob;
        }

        await Task.CompletedTask;
    }

    public async IAsyncEnumerable<int> Forever([EnumeratorCancellation] CancellationToken cancellationToken = default)
    {
        using CancellationTokenRegistration registration = cancellationToken.Register(() => ForeverCanceled.TrySetResult());
        for (int i = 0; ; i++)
        {
            yield return i;
            await Task.Yield();
        }
    }

    public async IAsyncEnumerable<int> ThrowAfter(int count, string message)
    {
        for (int i = 0; i < count; i++)
        {
            yield return i;
        }

        await Task.Yield();
        throw new InvalidOperationException(message);
    }

    public async Task<long> Sum(IAsyncEnumerable<int> values)
    {
        long sum = 0;
        await foreach (int value in values)
        {
            sum += value;
        }

        return sum;
    }

    public async ValueTask<int> SumFirst(int take, IAsyncEnumerable<int> values)
    {
        int sum = 0;
        int read = 0;
        await foreach (int value in values)
        {
            sum += value;
            if (++read == take)
            {
                break;
            }
        }

        return sum;
    }

    public async Task Drain(IAsyncEnumerable<int> values, CancellationToken cancellationToken = default)
    {
        try
        {
            await foreach (int value in values)
            {
                Interlocked.Increment(ref _drainCount);
            }

            DrainEnded.TrySetResult(null);
        }
        catch (Exception ex)
        {
            DrainEnded.TrySetResult(ex);
            throw;
        }
    }

    /// <summary>Completed when Ignore's token fires.</summary>
    public TaskCompletionSource IgnoreCanceled { get; } = new(TaskCreationOptions.RunContinuationsAsynchronously);

    public async Task Ignore(IAsyncEnumerable<int> values, CancellationToken cancellationToken = default)
    {
        try
        {
            await Task.Delay(Timeout.Infinite, cancellationToken);
        }
        finally
        {
            IgnoreCanceled.TrySetResult();
        }
    }

    public async IAsyncEnumerable<string> Echo(string prefix, IAsyncEnumerable<string> lines, [EnumeratorCancellation] CancellationToken cancellationToken = default)
    {
        await foreach (string line in lines.WithCancellation(cancellationToken))
        {
            yield return prefix + line;
        }
    }
}
