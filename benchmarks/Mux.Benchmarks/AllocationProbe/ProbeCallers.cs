using Mux.Samples.Contracts;

namespace Mux.Benchmarks.AllocationProbe;

/// <summary>Makes calls one after another and records the process's allocated bytes between rounds.</summary>
internal interface IProbeCaller : IAsyncDisposable
{
    /// <summary>
    /// Records <c>GC.GetTotalAllocatedBytes(precise: true)</c> in <c>marks[0]</c>, then runs
    /// <c>marks.Length - 1</c> rounds of <paramref name="callsPerRound"/> calls, recording the
    /// count after each round in the next element. One async method for all rounds, so its own
    /// state machine is allocated once, inside the first (warm-up) round.
    /// </summary>
    Task RunAsync(int callsPerRound, long[] marks);
}

/// <summary>The real thing: a <see cref="MuxClient"/> and the generated proxy.</summary>
internal sealed class RealClient(MuxClient client, ProbeScenario scenario) : IProbeCaller
{
    private readonly IUserService _proxy = client.CreateProxy<IUserService>();

    public async Task RunAsync(int callsPerRound, long[] marks)
    {
        marks[0] = GC.GetTotalAllocatedBytes(precise: true);
        for (int round = 1; round < marks.Length; round++)
        {
            for (int i = 0; i < callsPerRound; i++)
            {
                if (scenario.ListCount == 0)
                {
                    if (await _proxy.Add(1, 2) != 3)
                    {
                        throw new InvalidOperationException("Add(1, 2) did not return 3.");
                    }
                }
                else if ((await _proxy.List(scenario.ListCount)).Count != scenario.ListCount)
                {
                    throw new InvalidOperationException("List returned the wrong number of users.");
                }
            }

            marks[round] = GC.GetTotalAllocatedBytes(precise: true);
        }
    }

    public ValueTask DisposeAsync() => client.DisposeAsync();
}
