using System.Collections.Concurrent;
using System.Runtime.CompilerServices;

namespace Mux.Tests.Pipeline;

/// <summary>The server side of <see cref="IPipelineService"/>: records what its handlers saw, in
/// order, in <see cref="Log"/> (shared with the tests' interceptors).</summary>
public sealed class PipelineService(ConcurrentQueue<string> log) : IPipelineService
{
    private readonly TaskCompletionSource _release = new(TaskCreationOptions.RunContinuationsAsynchronously);
    private readonly TaskCompletionSource<TimeSpan?> _hangRemaining = new(TaskCreationOptions.RunContinuationsAsynchronously);
    private int _runs;

    /// <summary>What ran, in order: "handler Add", interceptors' "enter"/"exit" lines.</summary>
    public ConcurrentQueue<string> Log { get; } = log;

    /// <summary>How many handlers ran.</summary>
    public int Runs => Volatile.Read(ref _runs);

    /// <summary>The remaining time the first Hang call saw when it started.</summary>
    public Task<TimeSpan?> HangRemaining => _hangRemaining.Task;

    public void Release() => _release.TrySetResult();

    public ValueTask<int> Add(int a, int b)
    {
        Ran(nameof(Add));
        return new(a + b);
    }

    public Task<Dictionary<string, string>> Metadata(MuxCallContext? context = null)
    {
        Ran(nameof(Metadata));
        return Task.FromResult(context!.Metadata.ToDictionary(StringComparer.Ordinal));
    }

    public Task<string?> Lookup(string key, MuxCallContext? context = null)
    {
        Ran(nameof(Lookup));
        return Task.FromResult(context!.Metadata.TryGetValue(key, out string? value) ? value : null);
    }

    public Task<string> WhoAmI(MuxCallContext? context = null)
    {
        Ran(nameof(WhoAmI));
        return Task.FromResult(context!.User.Identity is { IsAuthenticated: true, Name: { } name } ? name : "anonymous");
    }

    public Task Fail(string message)
    {
        Ran(nameof(Fail));
        throw new InvalidOperationException(message);
    }

    public async IAsyncEnumerable<int> Count(int count, [EnumeratorCancellation] CancellationToken cancellationToken = default)
    {
        Ran(nameof(Count));
        for (int i = 1; i <= count; i++)
        {
            await Task.Yield();
            Log.Enqueue($"item {i}");
            yield return i;
        }
    }

    public async Task<int> Sum(IAsyncEnumerable<int> values)
    {
        Ran(nameof(Sum));
        int sum = 0;
        await foreach (int value in values)
        {
            sum += value;
        }

        return sum;
    }

    public async Task<int> Hang(MuxCallContext? context = null)
    {
        Ran(nameof(Hang));
        _hangRemaining.TrySetResult(context!.RemainingTime);
        await _release.Task.WaitAsync(context.CancellationToken);
        return 1;
    }

    private void Ran(string method)
    {
        Interlocked.Increment(ref _runs);
        Log.Enqueue("handler " + method);
    }
}
