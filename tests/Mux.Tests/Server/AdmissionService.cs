using System.Collections.Concurrent;
using System.Runtime.CompilerServices;

namespace Mux.Tests.Server;

public sealed class AdmissionService : IAdmissionService
{
    private readonly ConcurrentDictionary<int, int> _runs = new();
    private TaskCompletionSource _release = new(TaskCreationOptions.RunContinuationsAsynchronously);
    private int _held;

    /// <summary>Handlers holding now.</summary>
    public int Held => Volatile.Read(ref _held);

    /// <summary>How many times a handler ran with this id (0: never).</summary>
    public int RunsOf(int id) => _runs.GetValueOrDefault(id);

    /// <summary>Lets every handler holding now go on; later ones hold until the next release.</summary>
    public void ReleaseHeld() => Interlocked.Exchange(ref _release, new(TaskCreationOptions.RunContinuationsAsynchronously)).TrySetResult();

    public async Task<int> Hold(int id, CancellationToken cancellationToken = default)
    {
        await HoldAsync(id, cancellationToken);
        return id;
    }

    public Task<int> Echo(int id)
    {
        _runs.AddOrUpdate(id, 1, static (_, runs) => runs + 1);
        return Task.FromResult(id);
    }

    /// <summary>Calls that ran, whatever their id.</summary>
    public int TotalRuns => _runs.Values.Sum();

    public async Task HoldThenThrow(int id)
    {
        await HoldAsync(id, CancellationToken.None);
        throw new InvalidOperationException($"Call {id} failed on purpose.");
    }

    public async IAsyncEnumerable<int> HoldStream(int id, [EnumeratorCancellation] CancellationToken cancellationToken = default)
    {
        yield return id;
        await HoldAsync(id, cancellationToken);
        yield return id;
    }

    private async Task HoldAsync(int id, CancellationToken cancellationToken)
    {
        _runs.AddOrUpdate(id, 1, static (_, runs) => runs + 1);
        Task release = Volatile.Read(ref _release).Task;
        Interlocked.Increment(ref _held);
        try
        {
            await release.WaitAsync(TimeSpan.FromSeconds(30), cancellationToken);
        }
        finally
        {
            Interlocked.Decrement(ref _held);
        }
    }
}
