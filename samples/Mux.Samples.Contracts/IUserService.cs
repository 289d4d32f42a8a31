namespace Mux.Samples.Contracts;

/// <summary>The service the samples call (the contract from the design).</summary>
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
