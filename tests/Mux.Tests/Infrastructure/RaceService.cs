using System.Collections.Concurrent;

namespace Mux.Tests.Infrastructure;

/// <summary>The server side of <see cref="IRaceService"/>: records what each handler saw, so a
/// test can check the server's view of every call against the client's.</summary>
public sealed class RaceService : IRaceService
{
    // Hold handlers by id: the source the test releases, and whether the token fired. Written by
    // handlers (add, cancel) and the test (release); the dictionaries do the locking.
    private readonly ConcurrentDictionary<int, TaskCompletionSource> _holdReleases = new();
    private readonly ConcurrentDictionary<int, TaskCompletionSource> _holdCanceled = new();

    // Occupy: handlers running now, the most ever seen at once, and the permits the test hands out
    // one by one. Touched by handlers (Interlocked) and read by the test.
    private readonly SemaphoreSlim _occupyPermits = new(0);
    private readonly SemaphoreSlim _occupyStarts = new(0);
    private int _occupying;
    private int _maxOccupying;
    private int _occupyStarted;

    // Respond handlers that returned normally, by id. Written by handlers.
    private readonly ConcurrentDictionary<int, byte> _responded = new();

    // Respond handlers running now, and those that ended by their token. Written by handlers.
    private int _respondRunning;
    private int _respondCanceled;

    /// <summary>Ids whose Respond handler returned its result (rather than being cancelled).</summary>
    public bool Responded(int id) => _responded.ContainsKey(id);

    /// <summary>Respond handlers running now.</summary>
    public int RespondRunning => Volatile.Read(ref _respondRunning);

    /// <summary>Respond handlers that ended because their token fired.</summary>
    public int RespondCanceled => Volatile.Read(ref _respondCanceled);

    /// <summary>Hold handlers that have started.</summary>
    public int HoldStarted => _holdReleases.Count;

    /// <summary>Completes when the Hold handler of <paramref name="id"/> sees its token cancelled.</summary>
    public Task HoldCanceled(int id) => _holdCanceled.GetOrAdd(id, NewSource).Task;

    /// <summary>Ids of the Hold handlers whose token fired.</summary>
    public int[] HoldCanceledIds => [.. _holdCanceled.Where(p => p.Value.Task.IsCompleted).Select(p => p.Key).Order()];

    /// <summary>Lets the Hold handler of <paramref name="id"/> return.</summary>
    public void ReleaseHold(int id) => _holdReleases.GetOrAdd(id, NewSource).TrySetResult();

    /// <summary>Occupy handlers running now.</summary>
    public int Occupying => Volatile.Read(ref _occupying);

    /// <summary>The most Occupy handlers ever running at once.</summary>
    public int MaxOccupying => Volatile.Read(ref _maxOccupying);

    /// <summary>Occupy handlers that have started.</summary>
    public int OccupyStarted => Volatile.Read(ref _occupyStarted);

    /// <summary>Lets one waiting Occupy handler return.</summary>
    public void ReleaseOneOccupant() => _occupyPermits.Release();

    /// <summary>Waits until one more Occupy handler has started.</summary>
    public Task WaitForOccupantAsync() => _occupyStarts.WaitAsync(TestHost.Patience).ContinueWith(
        static t => Assert.True(t.Result, "No further Occupy handler started in time."), TaskScheduler.Default);

    public async Task<int> Respond(int id, int delayMilliseconds, CancellationToken cancellationToken = default)
    {
        Interlocked.Increment(ref _respondRunning);
        try
        {
            if (delayMilliseconds != 0)
            {
                await Task.Delay(delayMilliseconds < 0 ? Timeout.Infinite : delayMilliseconds, cancellationToken);
            }
        }
        catch (OperationCanceledException)
        {
            Interlocked.Increment(ref _respondCanceled);
            throw;
        }
        finally
        {
            Interlocked.Decrement(ref _respondRunning);
        }

        Assert.True(_responded.TryAdd(id, 0), $"Respond({id}) ran twice.");
        return id;
    }

    public async Task<int> Hold(int id, CancellationToken cancellationToken = default)
    {
        TaskCompletionSource release = _holdReleases.GetOrAdd(id, NewSource);
        try
        {
            await release.Task.WaitAsync(cancellationToken);
            return id;
        }
        catch (OperationCanceledException) when (cancellationToken.IsCancellationRequested)
        {
            _holdCanceled.GetOrAdd(id, NewSource).TrySetResult();
            throw;
        }
    }

    public async Task<int> Occupy(int id)
    {
        int now = Interlocked.Increment(ref _occupying);
        int max;
        while (now > (max = Volatile.Read(ref _maxOccupying)) && Interlocked.CompareExchange(ref _maxOccupying, now, max) != max)
        {
        }

        Interlocked.Increment(ref _occupyStarted);
        _occupyStarts.Release();
        try
        {
            Assert.True(await _occupyPermits.WaitAsync(TestHost.Patience), $"Occupy({id}) was never let go.");
            return id;
        }
        finally
        {
            Interlocked.Decrement(ref _occupying);
        }
    }

    private static TaskCompletionSource NewSource(int id) => new(TaskCreationOptions.RunContinuationsAsynchronously);
}
