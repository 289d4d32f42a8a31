namespace Mux.Samples.Load;

/// <summary>The service the load test calls (the contract from shared/DESIGN.md).</summary>
[MuxService]
public interface IUserService
{
    Task<List<User>> List(int count, CancellationToken cancellationToken = default);

    ValueTask<int> Add(int a, int b);

    Task Touch(string id);
}

/// <summary>Lets a load client ask the server how many connections it accepted.</summary>
[MuxService]
public interface ILoadStats
{
    ValueTask<long> GetConnectionsAccepted();
}
