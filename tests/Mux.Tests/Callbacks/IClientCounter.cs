namespace Mux.Tests.Callbacks;

/// <summary>A client-side contract with a stream, which a server's proxy to its client cannot call.</summary>
[MuxService]
public interface IClientCounter
{
    IAsyncEnumerable<int> Count(int count);

    Task<int> Sum(IAsyncEnumerable<int> values);
}
