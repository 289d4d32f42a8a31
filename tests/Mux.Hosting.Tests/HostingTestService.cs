using System.Collections.Concurrent;

namespace Mux.Hosting.Tests;

/// <summary>Records which <see cref="HostingTestService"/> instances were created and disposed,
/// and holds the gate that <see cref="IHostingTestService.WaitForGate"/> waits for. One per test
/// host, registered as a singleton and injected into every instance.</summary>
public sealed class InstanceTracker
{
    private int _lastId;
    private int _waiting;

    public ConcurrentQueue<int> Created { get; } = new();

    public ConcurrentQueue<int> Disposed { get; } = new();

    /// <summary>Values of the WaitForCancellation handlers whose token fired.</summary>
    public ConcurrentQueue<int> Canceled { get; } = new();

    public TaskCompletionSource Gate { get; } = new(TaskCreationOptions.RunContinuationsAsynchronously);

    /// <summary>How many WaitForGate handlers are waiting now.</summary>
    public int Waiting => Volatile.Read(ref _waiting);

    public int OnCreated()
    {
        int id = Interlocked.Increment(ref _lastId);
        Created.Enqueue(id);
        return id;
    }

    public void OnDisposed(int id) => Disposed.Enqueue(id);

    public void EnterGate() => Interlocked.Increment(ref _waiting);

    public void LeaveGate() => Interlocked.Decrement(ref _waiting);
}

/// <summary>The implementation the tests serve; gets its <see cref="InstanceTracker"/> by
/// constructor injection and reports its creation and disposal to it.</summary>
public sealed class HostingTestService : IHostingTestService, IAsyncDisposable
{
    private readonly InstanceTracker _tracker;
    private readonly int _id;
    private int _disposed;

    public HostingTestService(InstanceTracker tracker)
    {
        _tracker = tracker;
        _id = tracker.OnCreated();
    }

    public ValueTask<int> Add(int a, int b) => new(a + b);

    public Task<int> GetInstanceId() => Task.FromResult(_id);

    public async Task<int> WaitForGate(int value)
    {
        _tracker.EnterGate();
        try
        {
            await _tracker.Gate.Task.WaitAsync(TimeSpan.FromSeconds(30));
            return value;
        }
        finally
        {
            _tracker.LeaveGate();
        }
    }

    public async Task WaitForCancellation(int value, CancellationToken cancellationToken = default)
    {
        _tracker.EnterGate();
        try
        {
            await Task.Delay(TimeSpan.FromSeconds(30), cancellationToken);
        }
        catch (OperationCanceledException) when (cancellationToken.IsCancellationRequested)
        {
            _tracker.Canceled.Enqueue(value);
            throw;
        }
        finally
        {
            _tracker.LeaveGate();
        }
    }

    public Task Fail(string message) => throw new InvalidOperationException(message);

    public ValueTask DisposeAsync()
    {
        if (Interlocked.Exchange(ref _disposed, 1) == 0)
        {
            _tracker.OnDisposed(_id);
        }

        return ValueTask.CompletedTask;
    }
}
