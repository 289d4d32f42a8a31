using System.Runtime.CompilerServices;
using Mux.Samples.Contracts;

namespace Mux.LoadRunner.Peers;

/// <summary>
/// The peers whose clients call a method by its name with an argument array (StreamJsonRpc,
/// SignalR): the same four calls and the same checks, over the peer's own invoke.
/// </summary>
internal abstract class ByNameBenchClient(string method) : IBenchClient
{
    // The argument arrays are only read by the libraries, so every caller shares them; this spares
    // the peers the array and the boxing a typical call site would allocate.
    private static readonly object?[] s_add = [1, 2];
    private static readonly object?[] s_list1 = [1];
    private static readonly object?[] s_list100 = [100];
    private static readonly object?[] s_bytes1k = [1024];

    /// <summary>Calls <paramref name="name"/> on the server and returns its result.</summary>
    protected abstract Task<T> InvokeAsync<T>(string name, object?[] arguments);

    [AsyncMethodBuilder(typeof(PoolingAsyncValueTaskMethodBuilder))]
    public async ValueTask CallAsync(int caller)
    {
        switch (method)
        {
            case "add":
                BenchChecks.Sum(await InvokeAsync<int>("Add", s_add));
                break;
            case "list1":
                Check(await InvokeAsync<List<User>>("List", s_list1), 1);
                break;
            case "list100":
                Check(await InvokeAsync<List<User>>("List", s_list100), 100);
                break;
            case "bytes1k":
                BenchChecks.Bytes((await InvokeAsync<byte[]>("Bytes", s_bytes1k)).Length);
                break;
            default:
                throw new ArgumentException($"Unknown method '{method}'.");
        }
    }

    private static void Check(List<User> users, int count) =>
        BenchChecks.Users(count, users.Count, users.Count > 0 ? users[0].City : null);

    /// <summary>Neither library exposes frame or socket counters.</summary>
    public TransportCounters? GetCounters() => null;

    public abstract Task<ServerStats> GetServerStatsAsync(CancellationToken cancellationToken);

    public abstract ValueTask DisposeAsync();
}
