using System.Globalization;
using System.Net;

namespace Mux.LoadRunner;

/// <summary>
/// --servers LIST: one Mux client over N Mux server processes (MuxClientOptions.EndPoints, one
/// connection per instance, calls spread by power of two choices), for each N in LIST, each method
/// and each caller count. Reports calls/s, latency, CPU per call on the client and summed over the
/// servers, the connections the servers accepted (must equal N: one per instance), how the calls
/// were spread (smallest and largest share), and the CPU other processes used in the window.
/// </summary>
internal static class ServersMeasurement
{
    private static readonly TimeSpan s_serverStartTimeout = TimeSpan.FromSeconds(30);
    private static readonly TimeSpan s_stepTimeout = TimeSpan.FromSeconds(10);

    public static async Task<int> RunAsync(RunnerOptions options)
    {
        if (options.Systems.Count != 1 || options.Systems[0] != BenchSystems.Mux)
        {
            Console.Error.WriteLine("--servers measures Mux over several server processes: add --systems mux.");
            return 2;
        }

        AppDomain.CurrentDomain.ProcessExit += (_, _) => ServerProcess.KillAll();
        Console.CancelKeyPress += (_, _) => ServerProcess.KillAll();

        MachineInfo machine = MachineInfo.Describe();
        Console.WriteLine($"Mux load runner, several servers: {machine.Summary}");
        Console.WriteLine($"one client over N server processes (one connection each); window {options.Seconds:0.###} s after {options.Warmup:0.###} s warm-up per point.");
        Console.WriteLine();
        Console.WriteLine($"{"servers",7} {"method",-8} {"callers",7} {"calls/s",12} {"p50 us",9} {"p99 us",9} {"cli us/c",9} {"srv us/c",9} {"conns",5} {"share min-max",14} {"other",6}  errors");

        bool ok = true;
        try
        {
            foreach (int servers in options.Servers!)
            {
                foreach (string method in options.Methods)
                {
                    foreach (int callers in options.Callers)
                    {
                        ok &= await RunPointAsync(servers, method, callers, options);
                    }
                }
            }
        }
        finally
        {
            ServerProcess.KillAll();
        }

        return ok ? 0 : 1;
    }

    private static async Task<bool> RunPointAsync(int count, string method, int callers, RunnerOptions options)
    {
        var servers = new List<ServerProcess>(count);
        MuxBenchClient? client = null;
        string row = string.Create(CultureInfo.InvariantCulture, $"{count,7} {method,-8} {callers,7} ");
        try
        {
            for (int i = 0; i < count; i++)
            {
                servers.Add(await ServerProcess.StartAsync(BenchSystems.Mux, s_serverStartTimeout));
            }

            EndPoint[] endPoints = [.. servers.Select(s => (EndPoint)new IPEndPoint(IPAddress.Loopback, s.Port))];
            using (var connect = new CancellationTokenSource(s_stepTimeout))
            {
                client = await MuxBenchClient.ConnectToAllAsync(endPoints, method, connect.Token);
            }

            await client.CallAsync(0).AsTask().WaitAsync(s_stepTimeout);
            long[] sentBefore = CallsSent(client, endPoints);
            ProcessCounters clientBegin = default;
            ProcessCounters clientEnd = default;
            MachineCpu? machineBegin = null;
            MachineCpu? machineEnd = null;
            LoadWindow window = await ClosedLoop.RunAsync(
                client,
                callers,
                TimeSpan.FromSeconds(options.Warmup),
                TimeSpan.FromSeconds(options.Seconds),
                onWindowStart: () =>
                {
                    servers.ForEach(s => s.Mark("begin"));
                    machineBegin = MachineCpu.Take();
                    clientBegin = ProcessCounters.Take();
                },
                onWindowEnd: () =>
                {
                    clientEnd = ProcessCounters.Take();
                    machineEnd = MachineCpu.Take();
                    servers.ForEach(s => s.Mark("end"));
                },
                stopTimeout: s_stepTimeout);

            long[] sentAfter = CallsSent(client, endPoints);
            long serverCpuUs = 0;
            long connections = 0;
            foreach (EndPoint endPoint in endPoints)
            {
                using var statsTimeout = new CancellationTokenSource(s_stepTimeout);
                ServerStats stats = await MuxBenchClient.GetServerStatsAsync(endPoint, statsTimeout.Token).WaitAsync(s_stepTimeout);
                serverCpuUs += stats.CpuMicroseconds;
                connections += stats.ConnectionsAccepted - 1; // the control connection that asked
            }

            long calls = Math.Max(1, window.Calls);
            ProcessCounters clientDelta = clientEnd - clientBegin;
            double others = machineBegin is MachineCpu b && machineEnd is MachineCpu e && window.WindowSeconds > 0
                ? Math.Max(0, (e.Busy - b.Busy - clientDelta.Cpu - TimeSpan.FromMicroseconds(serverCpuUs)).TotalSeconds) / window.WindowSeconds
                : double.NaN;
            long spread = 0;
            long smallest = long.MaxValue;
            long largest = 0;
            for (int i = 0; i < endPoints.Length; i++)
            {
                long sent = sentAfter[i] - sentBefore[i];
                spread += sent;
                smallest = Math.Min(smallest, sent);
                largest = Math.Max(largest, sent);
            }

            string share = spread == 0 ? "-" : string.Create(CultureInfo.InvariantCulture, $"{100.0 * smallest / spread:0.0}-{100.0 * largest / spread:0.0}%");
            string errors = window.Errors == 0 && window.Failure is null && window.StoppedCleanly && connections == count
                ? "0"
                : $"{window.Errors} failed{(window.FirstError is null ? "" : $" (first: {window.FirstError})")}{(window.Failure is null ? "" : $"; {window.Failure}")}{(window.StoppedCleanly ? "" : "; callers still waiting after the window")}{(connections == count ? "" : $"; {connections} connections for {count} servers")}";
            Console.WriteLine(row + string.Create(
                CultureInfo.InvariantCulture,
                $"{window.Calls / window.WindowSeconds,12:N0} {window.Latency.PercentileMicroseconds(50),9:0.0} {window.Latency.PercentileMicroseconds(99),9:0.0} {clientDelta.Cpu.TotalMicroseconds / calls,9:0.00} {(double)serverCpuUs / calls,9:0.00} {connections,5} {share,14} {others,6:0.00}  {errors}"));
            return errors == "0";
        }
        catch (Exception ex)
        {
            string stderr = string.Join(" ", servers.Select(s => s.Stderr).Where(s => s.Length > 0));
            Console.WriteLine(row + $"failed: {ex.GetType().Name}: {ex.Message} {stderr}".TrimEnd());
            return false;
        }
        finally
        {
            if (client is not null)
            {
                await client.DisposeAsync().AsTask().WaitAsync(s_stepTimeout);
            }

            foreach (ServerProcess server in servers)
            {
                await server.DisposeAsync();
            }
        }
    }

    private static long[] CallsSent(MuxBenchClient client, EndPoint[] endPoints)
    {
        IReadOnlyList<MuxEndPointStatistics> statistics = client.Client.GetEndPointStatistics();
        var sent = new long[endPoints.Length];
        for (int i = 0; i < endPoints.Length; i++)
        {
            foreach (MuxEndPointStatistics instance in statistics)
            {
                if (instance.EndPoint.Equals(endPoints[i]))
                {
                    sent[i] = instance.CallsSent;
                }
            }
        }

        return sent;
    }
}
