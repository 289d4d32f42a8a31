using System.Threading.Tasks.Sources;
using Mux.Samples.Contracts;

namespace Mux.Benchmarks.AllocationProbe;

/// <summary>
/// The sample service, except that Add completes on a thread-pool thread after it has returned, as a
/// handler that waits for I/O does, while allocating nothing itself: what the probe then measures on
/// the server is what Mux allocates for a handler that completes asynchronously.
/// </summary>
internal sealed class LaterUserService : IUserService
{
    // More results than calls in flight (the probe makes one call at a time), so a result is never
    // reset while its previous completion is still unwinding.
    private const int Results = 64;

    private readonly UserService _inner = new();
    private readonly LaterResult[] _results = CreateResults();

    // Which result the next Add uses; incremented by every Add.
    private int _next;

    public ValueTask<int> Add(int a, int b) => _results[Interlocked.Increment(ref _next) % Results].CompleteLater(a + b);

    public Task<List<User>> List(int count, CancellationToken cancellationToken = default) => _inner.List(count, cancellationToken);

    public Task Touch(string id) => _inner.Touch(id);

    private static LaterResult[] CreateResults()
    {
        var results = new LaterResult[Results];
        for (int i = 0; i < results.Length; i++)
        {
            results[i] = new LaterResult();
        }

        return results;
    }

    /// <summary>A reusable result that a thread-pool work item completes.</summary>
    private sealed class LaterResult : IValueTaskSource<int>, IThreadPoolWorkItem
    {
        private ManualResetValueTaskSourceCore<int> _core;

        // The value the work item completes with. Written before the item is queued.
        private int _value;

        public ValueTask<int> CompleteLater(int value)
        {
            _core.Reset();
            _value = value;
            short version = _core.Version;
            ThreadPool.UnsafeQueueUserWorkItem(this, preferLocal: false);
            return new ValueTask<int>(this, version);
        }

        void IThreadPoolWorkItem.Execute() => _core.SetResult(_value);

        public int GetResult(short token) => _core.GetResult(token);

        public ValueTaskSourceStatus GetStatus(short token) => _core.GetStatus(token);

        public void OnCompleted(Action<object?> continuation, object? state, short token, ValueTaskSourceOnCompletedFlags flags) =>
            _core.OnCompleted(continuation, state, token, flags);
    }
}
