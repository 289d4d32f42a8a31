using System.Collections.Concurrent;

namespace Mux.Tests.Server;

/// <summary>The server side of <see cref="IKeptTokenService"/>: keeps the tokens of finished calls
/// and lets a test watch them while other calls are cancelled.</summary>
public sealed class KeptTokenService : IKeptTokenService
{
    // The tokens Keep was given, by id; written by Keep handlers, read by the test.
    private readonly ConcurrentDictionary<int, CancellationToken> _kept = new();

    // Ids of kept tokens that fired after Watch registered on them; written by token callbacks.
    private readonly ConcurrentQueue<int> _fired = new();

    // WaitForCancel handlers waiting now, and how many saw their own token fire.
    private int _waiting;
    private int _cancelled;

    /// <summary>How many tokens Keep has kept.</summary>
    public int KeptCount => _kept.Count;

    /// <summary>WaitForCancel handlers waiting on their token now.</summary>
    public int Waiting => Volatile.Read(ref _waiting);

    /// <summary>WaitForCancel handlers whose own token fired.</summary>
    public int Cancelled => Volatile.Read(ref _cancelled);

    /// <summary>Ids of kept tokens that fired after <see cref="Watch"/>.</summary>
    public int[] Fired => [.. _fired];

    /// <summary>Ids of kept tokens that report a cancellation now.</summary>
    public int[] CancelledNow => [.. _kept.Where(entry => entry.Value.IsCancellationRequested).Select(entry => entry.Key).Order()];

    /// <summary>Registers on every kept token, as background work that starts after its call has
    /// returned would: a token that fires from now on is recorded in <see cref="Fired"/>.</summary>
    public void Watch()
    {
        foreach ((int id, CancellationToken token) in _kept)
        {
            token.Register(() => _fired.Enqueue(id));
        }
    }

    public Task Keep(int id, CancellationToken cancellationToken = default)
    {
        Assert.True(_kept.TryAdd(id, cancellationToken), $"Keep({id}) ran twice.");
        return Task.CompletedTask;
    }

    public async Task WaitForCancel(CancellationToken cancellationToken = default)
    {
        var fired = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        await using CancellationTokenRegistration registration = cancellationToken.Register(() => fired.TrySetResult());
        Interlocked.Increment(ref _waiting);
        try
        {
            await fired.Task;
        }
        finally
        {
            Interlocked.Decrement(ref _waiting);
        }

        Interlocked.Increment(ref _cancelled);
        cancellationToken.ThrowIfCancellationRequested();
    }
}
