using System.Runtime.CompilerServices;

namespace Mux.AspNetCore.Tests;

/// <summary>Serves <see cref="IWebTestService"/>; one per test host (a singleton), with the gate
/// its held calls wait at.</summary>
public sealed class WebTestService : IWebTestService
{
    /// <summary>Opened by the test to let held calls finish.</summary>
    public TaskCompletionSource Gate { get; } = new(TaskCreationOptions.RunContinuationsAsynchronously);

    /// <summary>Completed once a call waits at the gate.</summary>
    public TaskCompletionSource Waiting { get; } = new(TaskCreationOptions.RunContinuationsAsynchronously);

    public ValueTask<int> Add(int a, int b) => new(a + b);

    public Task<string> WhoAmI(MuxCallContext? context = null)
    {
        System.Security.Claims.ClaimsPrincipal user = context!.User;
        return Task.FromResult(user.Identity is { IsAuthenticated: true, Name: { } name } ? name : "(anonymous)");
    }

    public Task<string> DescribeConnection(MuxCallContext? context = null)
    {
        MuxConnectionInfo connection = context!.Connection;
        return Task.FromResult($"{connection.RemoteEndPoint} {connection.ClientCertificate?.Subject ?? "(no certificate)"}");
    }

    public async IAsyncEnumerable<int> Count(int count, [EnumeratorCancellation] CancellationToken cancellationToken = default)
    {
        for (int i = 1; i <= count; i++)
        {
            await Task.Yield();
            yield return i;
        }
    }

    public async Task<long> Sum(IAsyncEnumerable<int> values)
    {
        long sum = 0;
        await foreach (int value in values)
        {
            sum += value;
        }

        return sum;
    }

    public async Task<int> WaitForGate(int value)
    {
        Waiting.TrySetResult();
        await Gate.Task.WaitAsync(TimeSpan.FromSeconds(30));
        return value;
    }

    public Task Ping() => Task.CompletedTask;

    public Task<int> Length(byte[] payload) => Task.FromResult(payload.Length);
}
