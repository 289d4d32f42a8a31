using System.Collections.Concurrent;
using Google.Protobuf;
using Grpc.Core;

namespace Mux.LoadRunner.Peers.Grpc;

/// <summary>
/// The grpc peer's service: the same prebuilt results as Mux's <see cref="BenchService"/>, as
/// protobuf messages built once, so the server measures grpc's cost, not building replies.
/// Registered as a singleton (grpc-dotnet would otherwise create one per call).
/// </summary>
internal sealed class GrpcBenchService(PeerStats stats) : Bench.BenchBase
{
    private readonly ConcurrentDictionary<int, Task<ListReply>> _lists = new();
    private readonly ConcurrentDictionary<int, Task<BytesReply>> _bytes = new();

    public override Task<AddReply> Add(AddRequest request, ServerCallContext context) =>
        Task.FromResult(new AddReply { Sum = request.A + request.B });

    public override Task<ListReply> List(ListRequest request, ServerCallContext context) =>
        _lists.GetOrAdd(request.Count, static count =>
        {
            var reply = new ListReply();
            foreach (Mux.Samples.Contracts.User user in BenchData.Users(count))
            {
                reply.Users.Add(new User { Id = user.ID, Name = user.Name, City = user.City, Email = user.EMail, Remark = user.Remark });
            }

            return Task.FromResult(reply);
        });

    public override Task<BytesReply> Bytes(BytesRequest request, ServerCallContext context) =>
        _bytes.GetOrAdd(request.Size, static size => Task.FromResult(new BytesReply { Data = ByteString.CopyFrom(BenchData.Bytes(size)) }));

    public override async Task<StatsReply> GetStats(StatsRequest request, ServerCallContext context)
    {
        ServerStats s = await stats.GetStatsAsync();
        return new StatsReply
        {
            WindowMarked = s.WindowMarked,
            CpuMicroseconds = s.CpuMicroseconds,
            AllocatedBytes = s.AllocatedBytes,
            Gen0 = s.Gen0,
            Gen1 = s.Gen1,
            Gen2 = s.Gen2,
            ConnectionsAccepted = s.ConnectionsAccepted,
        };
    }
}
