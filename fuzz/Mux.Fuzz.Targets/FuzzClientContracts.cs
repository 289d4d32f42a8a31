using System.Runtime.CompilerServices;
using Mux;

namespace Mux.Fuzz;

/// <summary>What the client target calls besides <see cref="IFuzzService"/>: a result of any
/// MessagePack shape (<c>object</c>), and streams of results, so fuzzed Responses and StreamItems reach
/// the client's own formatters and its stream consumer.</summary>
[MuxService]
public interface IFuzzStreams
{
    Task<object?> Anything();

    IAsyncEnumerable<FuzzShape?> Shapes();

    IAsyncEnumerable<object?> Values();
}

/// <summary>What the client target serves to its server, so fuzzed server-initiated Requests reach
/// argument decoding on the client, a stream the server sends, and one the client sends back.</summary>
[MuxService]
public interface IFuzzClientSide
{
    Task<int> Take(FuzzOrder? order, object? value, Dictionary<string, List<int>>? groups);

    Task<int> Drain(IAsyncEnumerable<FuzzShape?> shapes, CancellationToken cancellationToken);

    IAsyncEnumerable<int> Countdown(int from, CancellationToken cancellationToken);
}

internal sealed class FuzzClientSide : IFuzzClientSide
{
    /// <summary>The most items <see cref="Countdown"/> sends, whatever the server asks.</summary>
    private const int MaxCountdown = 100;

    public Task<int> Take(FuzzOrder? order, object? value, Dictionary<string, List<int>>? groups) =>
        Task.FromResult((order?.Lines.Count ?? 0) + (value is null ? 0 : 1) + (groups?.Count ?? 0));

    public async Task<int> Drain(IAsyncEnumerable<FuzzShape?> shapes, CancellationToken cancellationToken)
    {
        int count = 0;
        await foreach (FuzzShape? _ in shapes.WithCancellation(cancellationToken).ConfigureAwait(false))
        {
            count++;
        }

        return count;
    }

    public async IAsyncEnumerable<int> Countdown(int from, [EnumeratorCancellation] CancellationToken cancellationToken)
    {
        for (int i = Math.Min(from, MaxCountdown); i > 0; i--)
        {
            cancellationToken.ThrowIfCancellationRequested();
            yield return i;
            await Task.Yield();
        }
    }
}
