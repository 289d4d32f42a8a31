using System.Numerics;
using System.Runtime.CompilerServices;
using System.Runtime.InteropServices;
using Mux.Tests.Infrastructure;

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

    /// <summary>How many items the producers of Range and Blobs have handed out so far (counted
    /// before each is yielded): how far a producer has got ahead of its consumer.</summary>
    public long Produced => Volatile.Read(ref _produced);

    private long _produced;

    /// <summary>How many Range and Blobs producers have ended (completed, failed or been disposed).</summary>
    public int ProducersEnded => Volatile.Read(ref _producersEnded);

    private int _producersEnded;

    public async IAsyncEnumerable<int> Range(int start, int count, [EnumeratorCancellation] CancellationToken cancellationToken = default)
    {
        try
        {
            for (int i = 0; i < count; i++)
            {
                cancellationToken.ThrowIfCancellationRequested();
                Interlocked.Increment(ref _produced);
                yield return start + i;
            }

            await Task.CompletedTask;
        }
        finally
        {
            Interlocked.Increment(ref _producersEnded);
        }
    }

    public async IAsyncEnumerable<byte[]> Blobs(int count, int size)
    {
        try
        {
            // One array, refilled for each item: an item is serialized before the producer is
            // asked for the next, and 1,000 fresh 1 MiB arrays would cost the test more than the stream.
            byte[] blob = new byte[size];
            for (int i = 0; i < count; i++)
            {
                FillBlob(blob, i);
                Interlocked.Increment(ref _produced);
                yield return blob;
            }

            await Task.CompletedTask;
        }
        finally
        {
            Interlocked.Increment(ref _producersEnded);
        }
    }

    // Word w of every blob, before its index is added: w * 1024. Enough for 1 MiB items.
    private static readonly int[] s_blobRamp = Enumerable.Range(0, 256 * 1024).Select(w => w << 10).ToArray();

    /// <summary>Fills item <paramref name="index"/> of Blobs: its 4-byte words hold
    /// position * 1024 + index, so every word of every item (below 1024 items of up to 1 MiB)
    /// differs, and a lost, repeated, reordered or overwritten piece shows.</summary>
    public static void FillBlob(Span<byte> blob, int index)
    {
        Span<int> words = MemoryMarshal.Cast<byte, int>(blob);
        ReadOnlySpan<int> ramp = s_blobRamp.AsSpan(0, words.Length);
        var add = new Vector<int>(index);
        int w = 0;
        for (; w <= words.Length - Vector<int>.Count; w += Vector<int>.Count)
        {
            (new Vector<int>(ramp[w..]) + add).CopyTo(words[w..]);
        }

        for (; w < words.Length; w++)
        {
            words[w] = ramp[w] + index;
        }
    }

    /// <summary>Whether <paramref name="blob"/> is exactly item <paramref name="index"/> of Blobs.</summary>
    public static bool IsBlob(ReadOnlySpan<byte> blob, int index)
    {
        ReadOnlySpan<int> words = MemoryMarshal.Cast<byte, int>(blob);
        if (words.Length > s_blobRamp.Length || words.Length * sizeof(int) != blob.Length)
        {
            return false;
        }

        ReadOnlySpan<int> ramp = s_blobRamp.AsSpan(0, words.Length);
        var add = new Vector<int>(index);
        int w = 0;
        for (; w <= words.Length - Vector<int>.Count; w += Vector<int>.Count)
        {
            if (new Vector<int>(words[w..]) != new Vector<int>(ramp[w..]) + add)
            {
                return false;
            }
        }

        for (; w < words.Length; w++)
        {
            if (words[w] != ramp[w] + index)
            {
                return false;
            }
        }

        return true;
    }

    /// <summary>Gated's producer stops before this item (after ten quickly made ones).</summary>
    public const int GatedAt = 10;

    /// <summary>Holds Gated's producer before item <see cref="GatedAt"/>; set by the test.</summary>
    public ManualResetEventSlim Gate { get; } = new();

    public async IAsyncEnumerable<int> Gated(int count)
    {
        for (int i = 0; i < count; i++)
        {
            if (i == GatedAt)
            {
                // Blocking, not awaiting: to the stream the producer looks busy making the next item.
                Assert.True(Gate.Wait(TestHost.Patience), "The test never opened the gate.");
            }

            yield return i;
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

    public async IAsyncEnumerable<int> CancelAfter(int count, string message)
    {
        for (int i = 0; i < count; i++)
        {
            yield return i;
        }

        await Task.Yield();
        throw new MuxRemoteException(MuxStatusCode.Canceled, message);
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
