namespace Mux.Tests.Fragments;

/// <summary>Streams whose calls start with a large argument: a Request in fragments, then items.</summary>
[MuxService]
public interface IHeaderedStreams
{
    /// <summary>Client streaming: checks <paramref name="header"/> and returns the items in the order read.</summary>
    Task<int[]> Collect(byte[] header, IAsyncEnumerable<int> items);

    /// <summary>Duplex: checks <paramref name="header"/> and streams each item back, negated.</summary>
    IAsyncEnumerable<int> Negate(byte[] header, IAsyncEnumerable<int> items, CancellationToken cancellationToken = default);
}
