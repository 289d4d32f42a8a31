using System.Collections.Concurrent;

namespace Mux.Tests.Server;

/// <summary>Handlers that look at their CancellationToken, for the tests of a call object that is
/// reused across requests (each request with a token of its own).</summary>
[MuxService]
public interface ITokenRecordingService
{
    /// <summary>Leaves a registration on its token that records <paramref name="id"/> if the token
    /// is ever cancelled, and returns whether it was cancelled already.</summary>
    Task<bool> Remember(int id, CancellationToken cancellationToken = default);

    /// <summary>Waits until its token is cancelled.</summary>
    Task WaitForCancel(CancellationToken cancellationToken = default);
}

/// <summary>The server side of <see cref="ITokenRecordingService"/>.</summary>
public sealed class TokenRecordingService : ITokenRecordingService
{
    // Ids whose registration ran; written by token callbacks, read by the test.
    private readonly ConcurrentQueue<int> _cancelledAfterwards = new();

    // Released once per WaitForCancel handler that has started waiting.
    private readonly SemaphoreSlim _waiting = new(0);

    /// <summary>Ids of Remember calls whose token was cancelled after the handler had returned.</summary>
    public int[] CancelledAfterwards => [.. _cancelledAfterwards];

    /// <summary>Waits until one more WaitForCancel handler waits on its token.</summary>
    public Task<bool> WaitForWaiterAsync(TimeSpan patience) => _waiting.WaitAsync(patience);

    public Task<bool> Remember(int id, CancellationToken cancellationToken = default)
    {
        // Deliberately never disposed: a handler may leave registrations behind.
        cancellationToken.Register(() => _cancelledAfterwards.Enqueue(id));
        return Task.FromResult(cancellationToken.IsCancellationRequested);
    }

    public async Task WaitForCancel(CancellationToken cancellationToken = default)
    {
        var cancelled = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        await using CancellationTokenRegistration registration = cancellationToken.Register(() => cancelled.TrySetResult());
        _waiting.Release();
        await cancelled.Task;
        cancellationToken.ThrowIfCancellationRequested();
    }
}
