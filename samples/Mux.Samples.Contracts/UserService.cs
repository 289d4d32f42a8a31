namespace Mux.Samples.Contracts;

/// <summary>Returns canned users, like the BeetleX XRPC sample, so the test measures the RPC path.</summary>
public sealed class UserService : IUserService
{
    public Task<List<User>> List(int count, CancellationToken cancellationToken = default) =>
        Task.FromResult(SampleUsers.Create(count));

    public ValueTask<int> Add(int a, int b) => new(a + b);

    public Task Touch(string id) => Task.CompletedTask;
}

/// <summary>Answers <see cref="ILoadStats"/> from the hosting server.</summary>
public sealed class LoadStats(Func<long> connectionsAccepted) : ILoadStats
{
    public ValueTask<long> GetConnectionsAccepted() => new(connectionsAccepted());
}
