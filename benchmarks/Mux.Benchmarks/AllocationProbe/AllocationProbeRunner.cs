using System.Globalization;
using System.Runtime.CompilerServices;
using System.Threading.Tasks.Sources;
using Mux.Samples.Contracts;
using Mux.Transport;

namespace Mux.Benchmarks.AllocationProbe;

/// <summary>
/// <c>--alloc-probe</c>: how many bytes one call allocates on the client and on the server, in
/// steady state, measured apart.
/// </summary>
/// <remarks>
/// <para>BenchmarkDotNet's MemoryDiagnoser, like <c>GC.GetTotalAllocatedBytes</c>, counts every
/// thread of the process, so with client and server in one process it reports their sum. Counting
/// per thread does not split it either: a call's work hops between threads (the caller, the thread
/// pool, and reader loops that run inline on whichever thread flushed the pipe), and the client
/// and server share those threads.</para>
/// <para>So each side is measured against a stand-in for the other that allocates nothing per call
/// (<see cref="StubClient"/>, <see cref="StubServer"/>: pre-encoded frames over the same
/// in-memory pipes). Whatever the process allocates then belongs to the real side. Four runs per
/// kind of call: real client + real server (what BenchmarkDotNet sees), real client + stub server
/// (the client alone), stub client + real server (the server alone), and stub + stub (the
/// harness: must be 0, which shows that the stubs add nothing). Each run is a fresh connection:
/// 3 warm-up rounds, then 5 measured rounds of calls, one at a time or in batches all in flight at
/// once; a cell is the median round's bytes per call. The result objects that the client
/// deserializes and the service method's own allocations are measured alone on one thread and
/// subtracted, leaving Mux's own share.</para>
/// <para>Then one more real client + real server run per kind of call, under
/// <see cref="AllocationSampler"/>, names the types those bytes are.</para>
/// </remarks>
internal static class AllocationProbeRunner
{
    private const int WarmupRounds = 3;
    private const int MeasuredRounds = 5;
    private static readonly TimeSpan s_patience = TimeSpan.FromMinutes(2);

    public static async Task<int> RunAsync(TextWriter output)
    {
        UserServiceContracts.EnsureRegistered();
        ProbeScenario[] scenarios =
        [
            ProbeScenario.Add(callsPerRound: 50_000),
            ProbeScenario.AddCompletingLater(callsPerRound: 50_000),
            ProbeScenario.AddBatch(100, batchesPerRound: 500),
            ProbeScenario.List(1, callsPerRound: 50_000),
            ProbeScenario.List(100, callsPerRound: 5_000),
        ];

        output.WriteLine($"Mux allocation probe: bytes allocated per call, steady state ({Environment.ProcessorCount} cores, .NET {Environment.Version}).");
        output.WriteLine($"Each cell: median of {MeasuredRounds} rounds (after {WarmupRounds} warm-up rounds) of calls over in-memory pipes, one at a time unless the row says otherwise; whole process, GC.GetTotalAllocatedBytes(precise: true).");
        output.WriteLine();

        var rows = new List<Row>();
        (double Bytes, string Where) spread = (0, "");
        foreach (ProbeScenario scenario in scenarios)
        {
            Result both = await MeasureAsync(scenario, realClient: true, realServer: true);
            Result client = await MeasureAsync(scenario, realClient: true, realServer: false);
            Result server = await MeasureAsync(scenario, realClient: false, realServer: true);
            Result stubs = await MeasureAsync(scenario, realClient: false, realServer: false);
            foreach ((Result result, string where) in new[] { (both, "client + server"), (client, "client"), (server, "server"), (stubs, "stub + stub") })
            {
                if (result.Spread > spread.Bytes)
                {
                    spread = (result.Spread, $"{scenario.Name}, {where}");
                }
            }

            IUserService service = scenario.CreateService();
            rows.Add(new Row(
                scenario.Name,
                both.Median,
                client.Median,
                server.Median,
                stubs.Median,
                ResultObjects: AllocatedOnThisThread(scenario.DeserializeResult),
                ServiceMethod: AllocatedOnThisThread(() => scenario.CallService(service))));
        }

        output.WriteLine("| call | client + server | client (stub server) | server (stub client) | stub + stub | client: result objects | client: Mux | server: service method | server: Mux |");
        output.WriteLine("|---|---:|---:|---:|---:|---:|---:|---:|---:|");
        foreach (Row row in rows)
        {
            output.WriteLine($"| {row.Call} | {B(row.Both)} | {B(row.Client)} | {B(row.Server)} | {B(row.Stubs)} | {B(row.ResultObjects)} | {B(row.Client - row.ResultObjects)} | {B(row.ServiceMethod)} | {B(row.Server - row.ServiceMethod)} |");
        }

        output.WriteLine();
        output.WriteLine($"Largest difference between the measured rounds of one cell: {spread.Bytes:0.00} B/call ({spread.Where}).");
        output.WriteLine();
        output.WriteLine("Sizes of the objects Mux allocates per call (one instance each, measured):");
        output.WriteLine($"- MuxServerCall: {SizeOfMuxServerCall()} B (server, one per call running at once, reused for later requests: arguments, cancellation, the way back).");
        output.WriteLine($"- CancellationTokenSource: {AllocatedOnThisThread(static () => GC.KeepAlive(new CancellationTokenSource()))} B (server, per call of a method with a CancellationToken parameter: the generated dispatcher reads MuxServerCall.CancellationToken, which creates one per call and never reuses it, since a handler may keep its token; a deadline is armed on a timer the call object keeps).");
        output.WriteLine($"- Task<List<User>> of ValueTask.AsTask(): {SizeOfAsTask()} B (client, per call of a method returning Task<T>: the generated proxy wraps the pooled ValueTask).");
        output.WriteLine();

        output.WriteLine("What the client + server bytes are, by type (GCAllocationTick samples, about one per 100 KB allocated):");
        foreach (ProbeScenario scenario in scenarios)
        {
            using var sampler = new AllocationSampler();
            await MeasureAsync(scenario, realClient: true, realServer: true);
            await Task.Delay(TimeSpan.FromSeconds(1)); // The runtime delivers its events a little later.
            IReadOnlyList<(string Type, long Bytes)> sampled = sampler.Snapshot();
            double total = sampled.Sum(entry => (double)entry.Bytes);
            IEnumerable<string> shares = sampled
                .Where(entry => entry.Bytes >= total * 0.02)
                .Select(entry => $"{entry.Type} {entry.Bytes / total:P0}");
            output.WriteLine($"- {scenario.Name}: {(total == 0 ? "no samples" : string.Join(", ", shares))}");
        }

        output.WriteLine();
        Row add = rows[0];
        Row list1 = rows.Single(row => row.Call.StartsWith("List(1)", StringComparison.Ordinal));
        bool valueTaskTarget = Math.Round(add.Client) == 0;
        bool taskTarget = Math.Round(list1.Client - list1.ResultObjects) == SizeOfAsTask();
        output.WriteLine($"Target \"the client side of a ValueTask<int> call allocates 0 B/op in steady state\": {(valueTaskTarget ? "met" : "NOT met")} ({B(add.Client)} B).");
        output.WriteLine($"Target \"a Task<T> call allocates only its Task\" (besides the result objects): {(taskTarget ? "met" : "NOT met")} ({B(list1.Client - list1.ResultObjects)} B, the Task is {SizeOfAsTask()} B).");
        return 0;
    }

    private static async Task<Result> MeasureAsync(ProbeScenario scenario, bool realClient, bool realServer)
    {
        (DuplexPipeTransport clientSide, DuplexPipeTransport serverSide) = DuplexPipeTransport.CreatePair();

        MuxServer? server = null;
        StubServer? stubServer = null;
        if (realServer)
        {
            server = new MuxServer(new MuxServerOptions());
            server.AddService<IUserService>(scenario.CreateService());
            server.StartWithoutListener();
            server.Accept(serverSide, "probe");
        }
        else
        {
            stubServer = StubServer.Start(serverSide, scenario.MethodId, scenario.Response);
        }

        IProbeCaller caller = realClient
            ? new RealClient(await MuxClient.ConnectAsync(clientSide).WaitAsync(s_patience), scenario)
            : await StubClient.ConnectAsync(clientSide, scenario.Request, scenario.Batch).WaitAsync(s_patience);

        long[] marks = new long[WarmupRounds + MeasuredRounds + 1];
        try
        {
            await caller.RunAsync(scenario.BatchesPerRound, marks).WaitAsync(s_patience);
        }
        finally
        {
            await caller.DisposeAsync();
            if (server is not null)
            {
                await server.DisposeAsync();
            }

            if (stubServer is not null)
            {
                await stubServer.Completion.WaitAsync(s_patience);
            }
        }

        double[] perCall = new double[MeasuredRounds];
        for (int i = 0; i < MeasuredRounds; i++)
        {
            int round = WarmupRounds + i + 1;
            perCall[i] = (marks[round] - marks[round - 1]) / (double)scenario.CallsPerRound;
        }

        Array.Sort(perCall);
        return new Result(perCall[MeasuredRounds / 2], perCall[^1] - perCall[0]);
    }

    /// <summary>Bytes that one run of <paramref name="action"/> allocates on this thread, after two
    /// runs to warm it up (the delegate itself is allocated before the measurement).</summary>
    private static long AllocatedOnThisThread(Action action)
    {
        action();
        action();
        long before = GC.GetAllocatedBytesForCurrentThread();
        action();
        return GC.GetAllocatedBytesForCurrentThread() - before;
    }

    private static long SizeOfMuxServerCall() =>
        AllocatedOnThisThread(static () => GC.KeepAlive(RuntimeHelpers.GetUninitializedObject(typeof(MuxServerCall))));

    private static long SizeOfAsTask()
    {
        var source = new NeverCompletes();
        return AllocatedOnThisThread(() => GC.KeepAlive(new ValueTask<List<User>>(source, 0).AsTask()));
    }

    private static string B(double bytes) => bytes.ToString("0.#", CultureInfo.InvariantCulture);

    private readonly record struct Result(double Median, double Spread);

    private sealed record Row(string Call, double Both, double Client, double Server, double Stubs, long ResultObjects, long ServiceMethod);

    /// <summary>A pending IValueTaskSource, so that AsTask() builds the same Task a pending call gets.</summary>
    private sealed class NeverCompletes : IValueTaskSource<List<User>>
    {
        public List<User> GetResult(short token) => throw new InvalidOperationException("Never completes.");

        public ValueTaskSourceStatus GetStatus(short token) => ValueTaskSourceStatus.Pending;

        public void OnCompleted(Action<object?> continuation, object? state, short token, ValueTaskSourceOnCompletedFlags flags)
        {
        }
    }
}
