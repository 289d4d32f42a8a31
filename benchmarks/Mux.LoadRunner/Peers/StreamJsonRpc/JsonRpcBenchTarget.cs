using Mux.Samples.Contracts;

namespace Mux.LoadRunner.Peers.StreamJsonRpc;

/// <summary>
/// The StreamJsonRpc peer's RPC target: Mux's <see cref="BenchService"/> results (the same
/// prebuilt lists and arrays) and the stats call. StreamJsonRpc calls public methods by name.
/// </summary>
internal sealed class JsonRpcBenchTarget(BenchService service, PeerStats stats)
{
    public int Add(int a, int b) => a + b;

    public Task<List<User>> List(int count) => service.List(count);

    public Task<byte[]> Bytes(int size) => service.Bytes(size);

    public Task<ServerStats> GetStats() => stats.GetStatsAsync();
}
