namespace Mux.Tests.Pipeline;

/// <summary>The contract of the call-pipeline tests (interceptors, metadata, who is calling, per-call options).</summary>
[MuxService]
public interface IPipelineService
{
    /// <summary>Returns <paramref name="a"/> + <paramref name="b"/>; counts the run.</summary>
    ValueTask<int> Add(int a, int b);

    /// <summary>The metadata the call carried, as the handler sees it (keys as the server has them).</summary>
    Task<Dictionary<string, string>> Metadata(MuxCallContext? context = null);

    /// <summary>Looks up <paramref name="key"/> in the call's metadata; null when it is not there.</summary>
    Task<string?> Lookup(string key, MuxCallContext? context = null);

    /// <summary>The name of the user the call runs as, or "anonymous".</summary>
    Task<string> WhoAmI(MuxCallContext? context = null);

    /// <summary>Throws InvalidOperationException with <paramref name="message"/>.</summary>
    Task Fail(string message);

    /// <summary>Streams 1..<paramref name="count"/>.</summary>
    IAsyncEnumerable<int> Count(int count, CancellationToken cancellationToken = default);

    /// <summary>Sums the caller's stream.</summary>
    Task<int> Sum(IAsyncEnumerable<int> values);

    /// <summary>Records the time the caller sent (MuxCallContext.RemainingTime), then waits for its
    /// token (the caller gives up) or the test's release.</summary>
    Task<int> Hang(MuxCallContext? context = null);
}
