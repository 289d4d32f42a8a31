using System.Runtime.CompilerServices;

namespace Mux.LoadRunner;

/// <summary>The streams the --stream measurement reads: small ints, and byte arrays of any size.</summary>
[MuxService]
public interface IBenchStreams
{
    /// <summary>Streams 0 .. count-1.</summary>
    IAsyncEnumerable<int> Ints(int count, CancellationToken cancellationToken = default);

    /// <summary>Streams <paramref name="count"/> arrays of <paramref name="size"/> bytes.</summary>
    IAsyncEnumerable<byte[]> Blobs(int count, int size, CancellationToken cancellationToken = default);
}

/// <summary>Serves <see cref="IBenchStreams"/>; Blobs sends one prebuilt array over and over, so
/// the server measures the stream's cost, not the making of items.</summary>
internal sealed class BenchStreams : IBenchStreams
{
    public async IAsyncEnumerable<int> Ints(int count, [EnumeratorCancellation] CancellationToken cancellationToken = default)
    {
        for (int i = 0; i < count; i++)
        {
            yield return i;
        }

        await Task.CompletedTask;
    }

    public async IAsyncEnumerable<byte[]> Blobs(int count, int size, [EnumeratorCancellation] CancellationToken cancellationToken = default)
    {
        byte[] blob = new byte[size];
        Random.Shared.NextBytes(blob);
        for (int i = 0; i < count; i++)
        {
            yield return blob;
        }

        await Task.CompletedTask;
    }
}
