namespace Mux.Tests.Callbacks;

/// <summary>A client-side contract with streams both ways, which a server calls through the proxy
/// it gets for its client.</summary>
[MuxService]
public interface IClientCounter
{
    /// <summary>1..<paramref name="count"/>, one item at a time (the client streams).</summary>
    IAsyncEnumerable<int> Count(int count, CancellationToken cancellationToken = default);

    /// <summary>The sum of the server's stream (the server streams).</summary>
    Task<int> Sum(IAsyncEnumerable<int> values);

    /// <summary>Each of the server's items times <paramref name="factor"/>, as they come (duplex).</summary>
    IAsyncEnumerable<int> Scale(int factor, IAsyncEnumerable<int> values);
}
