namespace Mux.AspNetCore.Tests;

/// <summary>The contract the WebSocket tests serve and call; Mux generates its proxy and dispatcher.</summary>
[MuxService]
public interface IWebTestService
{
    ValueTask<int> Add(int a, int b);

    /// <summary>The name of <see cref="MuxCallContext.User"/>, or "(anonymous)" when no identity is authenticated.</summary>
    Task<string> WhoAmI(MuxCallContext? context = null);

    /// <summary>The remote address and the client certificate's subject the call's connection has.</summary>
    Task<string> DescribeConnection(MuxCallContext? context = null);

    /// <summary>Streams 1..<paramref name="count"/>.</summary>
    IAsyncEnumerable<int> Count(int count, CancellationToken cancellationToken = default);

    /// <summary>Sums what the client streams.</summary>
    Task<long> Sum(IAsyncEnumerable<int> values);

    /// <summary>Waits until the test opens <see cref="WebTestService.Gate"/> (or 30 s pass), then returns <paramref name="value"/>.</summary>
    Task<int> WaitForGate(int value);

    /// <summary>Returns nothing; called only by the telemetry test, so its measurements are its own.</summary>
    Task Ping();

    /// <summary>Returns the length of <paramref name="payload"/>.</summary>
    Task<int> Length(byte[] payload);
}
