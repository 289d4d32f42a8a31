using Microsoft.AspNetCore.SignalR;
using Mux.Samples.Contracts;

namespace Mux.LoadRunner.Peers.SignalR;

/// <summary>
/// The SignalR peer's hub: Mux's <see cref="BenchService"/> results (the same prebuilt lists and
/// arrays) and the stats call. SignalR creates a hub per invocation; the state lives in singletons.
/// </summary>
internal sealed class BenchHub(BenchService service, PeerStats stats) : Hub
{
    public int Add(int a, int b) => a + b;

    public Task<List<User>> List(int count) => service.List(count);

    public Task<byte[]> Bytes(int size) => service.Bytes(size);

    public Task<ServerStats> GetStats() => stats.GetStatsAsync();
}
