using System.Runtime.CompilerServices;

namespace Mux.Tests.Fragments;

/// <summary>Serves <see cref="IHeaderedStreams"/>; a header that is not <see cref="BlobService.Pattern"/>
/// fails the call, so a Request reassembled wrong shows.</summary>
public sealed class HeaderedStreams : IHeaderedStreams
{
    public async Task<int[]> Collect(byte[] header, IAsyncEnumerable<int> items)
    {
        CheckHeader(header);
        var read = new List<int>();
        await foreach (int item in items)
        {
            read.Add(item);
        }

        return read.ToArray();
    }

    public async IAsyncEnumerable<int> Negate(byte[] header, IAsyncEnumerable<int> items, [EnumeratorCancellation] CancellationToken cancellationToken = default)
    {
        CheckHeader(header);
        await foreach (int item in items.WithCancellation(cancellationToken))
        {
            yield return -item;
        }
    }

    private static void CheckHeader(byte[] header)
    {
        if (!header.AsSpan().SequenceEqual(BlobService.Pattern(header.Length)))
        {
            throw new MuxRemoteException(MuxStatusCode.InvalidArguments, $"The {header.Length}-byte header arrived changed.");
        }
    }
}
