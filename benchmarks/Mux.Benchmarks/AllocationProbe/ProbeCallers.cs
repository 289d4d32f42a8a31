using Mux.Samples.Contracts;

namespace Mux.Benchmarks.AllocationProbe;

/// <summary>Makes calls, a batch at a time, and records the process's allocated bytes between rounds.</summary>
internal interface IProbeCaller : IAsyncDisposable
{
    /// <summary>
    /// Records <c>GC.GetTotalAllocatedBytes(precise: true)</c> in <c>marks[0]</c>, then runs
    /// <c>marks.Length - 1</c> rounds of <paramref name="batchesPerRound"/> batches of calls (all
    /// calls of a batch in flight at once; a batch of 1 is a lone call), recording the count after
    /// each round in the next element. One async method for all rounds, so its own state machine
    /// is allocated once, inside the first (warm-up) round.
    /// </summary>
    Task RunAsync(int batchesPerRound, long[] marks);
}

/// <summary>The real thing: a <see cref="MuxClient"/> and the generated proxy.</summary>
internal sealed class RealClient(MuxClient client, ProbeScenario scenario) : IProbeCaller
{
    private readonly IUserService _proxy = client.CreateProxy<IUserService>();
    private readonly ValueTask<int>[] _batch = new ValueTask<int>[scenario.Batch];

    public async Task RunAsync(int batchesPerRound, long[] marks)
    {
        marks[0] = GC.GetTotalAllocatedBytes(precise: true);
        for (int round = 1; round < marks.Length; round++)
        {
            for (int i = 0; i < batchesPerRound; i++)
            {
                if (scenario.ListCount != 0)
                {
                    if ((await _proxy.List(scenario.ListCount)).Count != scenario.ListCount)
                    {
                        throw new InvalidOperationException("List returned the wrong number of users.");
                    }

                    continue;
                }

                // Add: start the whole batch, then await each call (as CallBenchmarks.AddBatch* does).
                for (int call = 0; call < _batch.Length; call++)
                {
                    _batch[call] = _proxy.Add(1, 2);
                }

                for (int call = 0; call < _batch.Length; call++)
                {
                    if (await _batch[call] != 3)
                    {
                        throw new InvalidOperationException("Add(1, 2) did not return 3.");
                    }
                }
            }

            marks[round] = GC.GetTotalAllocatedBytes(precise: true);
        }
    }

    public ValueTask DisposeAsync() => client.DisposeAsync();
}
