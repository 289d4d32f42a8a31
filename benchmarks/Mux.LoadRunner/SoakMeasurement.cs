using System.Diagnostics;
using System.Globalization;
using System.Net;
using System.Runtime;
using System.Text;

namespace Mux.LoadRunner;

/// <summary>
/// --soak SECONDS: mixed load (<see cref="SoakLoad"/>) on one client over several Mux server
/// processes, one of which is killed (no GoAway, no drain) and restarted on its port every few
/// minutes. Every interval it prints one line (memory, collections, calls/s, endings by kind,
/// calls outstanding and stuck) and appends it to a CSV; at the end a summary with the flatness of
/// memory between 1/6 and 5/6 of the run, the calls lost, and the errors outside the fault windows
/// (a kill up to a few seconds after the client is back on the new server), plus an SVG of memory
/// over time. Fails when a call was lost or got stuck, an error surfaced outside a fault window, or
/// a killed server did not come back.
/// </summary>
internal static class SoakMeasurement
{
    private static readonly TimeSpan s_serverStartTimeout = TimeSpan.FromSeconds(30);
    private static readonly TimeSpan s_stepTimeout = TimeSpan.FromSeconds(10);

    // How long after the client is back on the restarted server its fault window stays open: calls
    // that failed at the kill end within milliseconds, but on a loaded 2-core machine (CI) a
    // caller's continuation, which records the error, can wait seconds for a thread: 10 s keeps
    // such scheduling from failing the run, while an error no restart explains still does.
    private static readonly TimeSpan s_windowTail = TimeSpan.FromSeconds(10);

    // A kill comes no later than this (plus the time down) before the end, so that the client is
    // back and most of the window passes within the run (60 s still sees two restarts).
    private static readonly TimeSpan s_restartRoom = TimeSpan.FromSeconds(15);

    // A client must be back well within this after its server is (ReconnectMaxDelay is 5 s).
    private static readonly TimeSpan s_comeBackTimeout = TimeSpan.FromSeconds(60);

    // Callers that have not finished their current call this long after the end hold lost calls
    // (the longest deadline is the 16 MiB transfers' 60 s; every call normally ends in milliseconds).
    private static readonly TimeSpan s_drainTimeout = TimeSpan.FromSeconds(70);

    private const int DefaultServers = 3;
    private const int DefaultCallers = 32;
    private const double FlatTolerance = 0.10;

    public static async Task<int> RunAsync(RunnerOptions options)
    {
        AppDomain.CurrentDomain.ProcessExit += (_, _) => ServerProcess.KillAll();
        Console.CancelKeyPress += (_, _) => ServerProcess.KillAll();

        TimeSpan duration = TimeSpan.FromSeconds(options.SoakSeconds!.Value);
        int serverCount = options.Servers is { Count: 1 } servers ? servers[0] : DefaultServers;
        int callers = options.Callers.Count == 1 ? options.Callers[0] : DefaultCallers;
        TimeSpan pause = TimeSpan.FromMilliseconds(options.PauseMs);
        TimeSpan restartEvery = TimeSpan.FromSeconds(options.RestartServerAfter ?? Math.Clamp(duration.TotalSeconds / 3, 10, 180));
        TimeSpan down = TimeSpan.FromSeconds(options.ServerDown);
        TimeSpan sampleEvery = duration < TimeSpan.FromMinutes(5) ? TimeSpan.FromSeconds(10) : TimeSpan.FromMinutes(1);
        TimeSpan callTimeout = new MuxClientOptions().CallTimeout;
        if (options.Servers is { Count: > 1 })
        {
            Console.Error.WriteLine("--soak takes one server count: --servers N.");
            return 2;
        }

        DateTimeOffset started = DateTimeOffset.Now;
        MachineInfo machine = MachineInfo.Describe();
        string outDirectory = Report.ResolveOutDirectory(options.OutDirectory);
        Directory.CreateDirectory(outDirectory);
        string stem = Path.Combine(outDirectory, "soak-" + started.ToString("yyyyMMdd-HHmmss", CultureInfo.InvariantCulture));
        Console.WriteLine($"Mux soak: {machine.Summary}");
        Console.WriteLine(string.Create(CultureInfo.InvariantCulture, $"{duration.TotalSeconds:0} s on one client over {serverCount} Mux server processes (one connection each): {SoakLoad.Describe(callers, pause)}."));
        Console.WriteLine(string.Create(CultureInfo.InvariantCulture, $"a server process killed every {restartEvery.TotalSeconds:0} s (in turn; none within {(down + s_restartRoom).TotalSeconds:0} s of the end) and restarted on its port {down.TotalSeconds:0.###} s later; client defaults (CallTimeout {callTimeout.TotalSeconds:0} s, AutoReconnect); a call outstanding {SoakLedger.StuckMargin.TotalSeconds:0} s past its deadline is stuck."));
        Console.WriteLine(string.Create(CultureInfo.InvariantCulture, $"every {sampleEvery.TotalSeconds:0} s one line of the interval's counts (in flight: at the line); memory is read after an aggressive full collection (gen2 counts the runner's others); outside: errors outside the fault windows (a kill to {s_windowTail.TotalSeconds:0} s after the client is back)."));
        Console.WriteLine();

        var serverSet = new ServerProcess?[serverCount];
        MuxBenchClient? client = null;
        var windows = new FaultWindows();
        var ledger = new SoakLedger(windows);
        var samples = new List<SoakSample>();
        var restarts = new List<RestartRecord>();
        var problems = new List<string>();
        SoakLoad? load = null;
        // Taken once the callers have stopped and before the client is disposed (which would end a
        // call that never ended by itself).
        SoakCounts? ended = null;
        List<string> lostCalls = [];
        using var stopRestarts = new CancellationTokenSource();
        Task restartLoop = Task.CompletedTask;
        try
        {
            ServerProcess[] first = await Task.WhenAll(Enumerable.Range(0, serverCount).Select(_ => ServerProcess.StartAsync(BenchSystems.Mux, s_serverStartTimeout)));
            first.CopyTo(serverSet, 0);
            EndPoint[] endPoints = [.. first.Select(s => (EndPoint)new IPEndPoint(IPAddress.Loopback, s.Port))];
            using (var connect = new CancellationTokenSource(s_stepTimeout))
            {
                client = await MuxBenchClient.ConnectToAllAsync(endPoints, "add", connect.Token);
            }

            Console.WriteLine($"servers on ports {string.Join(", ", first.Select(s => s.Port))}; writing {stem}.csv");
            Console.WriteLine();
            using var csv = new StreamWriter(stem + ".csv", append: false, new UTF8Encoding(encoderShouldEmitUTF8Identifier: false)) { AutoFlush = true };
            await csv.WriteLineAsync($"# {machine.Summary}; {duration.TotalSeconds:0} s; {serverCount} servers; {callers} unary callers; pause {pause.TotalMilliseconds:0} ms; restart every {restartEvery.TotalSeconds:0} s, down {down.TotalSeconds:0.###} s");
            await csv.WriteLineAsync(SoakSample.CsvHeader(serverCount));
            Console.WriteLine(SoakSample.ConsoleHeader);

            load = new SoakLoad(client.Client, ledger, callTimeout, pause);
            var sampler = new MemorySampler(serverSet);
            ledger.MarkOrigin();
            long origin = ledger.Origin;
            load.Start(callers);

            restartLoop = RestartLoopAsync(serverSet, client.Client, ledger, restarts, problems, origin, restartEvery, down, duration, stopRestarts.Token);

            SoakCounts last = ledger.Counts;
            double lastSeconds = 0;
            TimeSpan nextSample = sampleEvery;
            using var tick = new PeriodicTimer(TimeSpan.FromSeconds(1));
            while (true)
            {
                await tick.WaitForNextTickAsync();
                foreach (string stuck in ledger.StuckScan())
                {
                    Console.WriteLine($"  STUCK: {stuck}");
                }

                foreach (string error in ledger.TakeUnprinted())
                {
                    Console.WriteLine($"  ERROR: {error}");
                }

                TimeSpan elapsed = Stopwatch.GetElapsedTime(origin);
                bool end = elapsed >= duration;
                if (elapsed >= nextSample || end)
                {
                    SoakCounts now = ledger.Counts;
                    double seconds = elapsed.TotalSeconds;
                    SoakSample sample = await load.BetweenBigMessagesAsync(() => sampler.Take(seconds, seconds - lastSeconds, now - last, now));
                    samples.Add(sample);
                    Console.WriteLine(sample.ConsoleLine());
                    await csv.WriteLineAsync(sample.CsvLine(serverCount));
                    last = now;
                    lastSeconds = seconds;
                    while (nextSample <= elapsed)
                    {
                        nextSample += sampleEvery;
                    }
                }

                if (end)
                {
                    break;
                }
            }

            if (!await StopRestartsAsync(stopRestarts, restartLoop))
            {
                problems.Add("the restart loop did not finish");
            }

            if (!await load.StopAsync(s_drainTimeout))
            {
                problems.Add($"callers still in a call {s_drainTimeout.TotalSeconds:0} s after the end");
            }

            foreach (string stuck in ledger.StuckScan())
            {
                Console.WriteLine($"  STUCK: {stuck}");
            }

            ended = ledger.Counts;
            lostCalls = ledger.DescribeInFlight(5);
        }
        catch (Exception ex)
        {
            string stderr = string.Join(" ", serverSet.Where(s => s is not null && s.Stderr.Length > 0).Select(s => s!.Stderr));
            lock (problems)
            {
                problems.Add($"{ex.GetType().Name}: {ex.Message} {stderr}".TrimEnd());
            }

            await StopRestartsAsync(stopRestarts, restartLoop);
            if (load is not null)
            {
                await load.StopAsync(s_drainTimeout);
            }

            ended = ledger.Counts;
            lostCalls = ledger.DescribeInFlight(5);
        }
        finally
        {
            if (client is not null)
            {
                await client.DisposeAsync().AsTask().WaitAsync(s_stepTimeout).ContinueWith(static _ => { }, TaskScheduler.Default);
            }

            foreach (ServerProcess? server in serverSet)
            {
                if (server is not null)
                {
                    await server.DisposeAsync();
                }
            }

            ServerProcess.KillAll();
        }

        SoakCounts total = ended ?? ledger.Counts;
        Console.WriteLine();
        string chart = stem + ".svg";
        if (samples.Count > 0)
        {
            File.WriteAllText(chart, SoakChart.Render(samples, restarts, serverCount, $"Mux soak, {duration.TotalSeconds:0} s, {machine.CpuModel}, {started:yyyy-MM-dd}"));
        }

        return Summarize(duration, serverCount, total, samples, restarts, problems, ledger.Messages, lostCalls, stem + ".csv", chart);
    }

    private static int Summarize(TimeSpan duration, int serverCount, SoakCounts total, List<SoakSample> samples, List<RestartRecord> restarts, List<string> problems, IReadOnlyList<string> messages, List<string> lostCalls, string csv, string chart)
    {
        long lost = total.InFlight;
        Console.WriteLine(string.Create(CultureInfo.InvariantCulture, $"Summary: {duration.TotalSeconds:0} s, {serverCount} servers, {restarts.Count} restart(s)."));
        Console.WriteLine(string.Create(CultureInfo.InvariantCulture, $"  calls: {total.Started:N0} made, {total.Completed:N0} ended, lost {lost:N0}, stuck {total.Stuck:N0}"));
        Console.WriteLine(string.Create(CultureInfo.InvariantCulture, $"  ended: ok {total.Ok:N0}; as expected: timeouts {total.ExpectedTimeout:N0}, cancellations {total.ExpectedCancel:N0}; errors: connection lost {total.ConnectionLost:N0} ({total.ConnectionLostOutside:N0} outside fault windows), other {total.Other:N0} ({total.OtherOutside:N0} outside)"));
        foreach (RestartRecord restart in restarts)
        {
            Console.WriteLine("  " + restart);
        }

        foreach (string message in messages)
        {
            Console.WriteLine($"  error: {message}");
        }

        foreach (string call in lostCalls)
        {
            Console.WriteLine($"  lost: {call}");
        }

        string memory;
        string memoryChange;
        SoakSample? early = samples.Count == 0 ? null : Nearest(samples, duration.TotalSeconds / 6);
        SoakSample? late = samples.Count == 0 ? null : Nearest(samples, duration.TotalSeconds * 5 / 6);
        if (early is null || late is null || early == late)
        {
            memory = "memory: too few samples to compare";
            memoryChange = "memory not compared";
        }
        else
        {
            double ws = Change(early.WorkingSetBytes, late.WorkingSetBytes);
            double heap = Change(early.HeapBytes, late.HeapBytes);
            bool flat = Math.Abs(ws) <= FlatTolerance && Math.Abs(heap) <= FlatTolerance;
            memory = string.Create(CultureInfo.InvariantCulture,
                $"memory at {early.Seconds:0} s and {late.Seconds:0} s (1/6 and 5/6 of the run): working set {Mib(early.WorkingSetBytes):0.0} -> {Mib(late.WorkingSetBytes):0.0} MiB ({ws:+0.0%;-0.0%}), GC heap {Mib(early.HeapBytes):0.0} -> {Mib(late.HeapBytes):0.0} MiB ({heap:+0.0%;-0.0%}): {(flat ? "flat" : "NOT flat")} (target: both within {FlatTolerance:0%}; reported only, not in the exit code)");
            memoryChange = string.Create(CultureInfo.InvariantCulture, $"memory from 1/6 to 5/6 of the run: working set {ws:+0.0%;-0.0%}, GC heap {heap:+0.0%;-0.0%}");
        }

        Console.WriteLine("  " + memory);
        foreach (string problem in problems)
        {
            Console.WriteLine($"  problem: {problem}");
        }

        Console.WriteLine($"  CSV: {csv}");
        Console.WriteLine($"  SVG: {chart}");

        var failures = new List<string>();
        if (lost > 0)
        {
            failures.Add($"{lost} call(s) lost");
        }

        if (total.Stuck > 0)
        {
            failures.Add($"{total.Stuck} call(s) stuck");
        }

        if (total.ErrorsOutside > 0)
        {
            failures.Add($"{total.ErrorsOutside} error(s) outside fault windows");
        }

        if (total.Ok == 0)
        {
            failures.Add("no call succeeded");
        }

        failures.AddRange(problems);
        Console.WriteLine(string.Create(CultureInfo.InvariantCulture,
            $"soak: {duration.TotalSeconds:0} s, {serverCount} servers, {restarts.Count} restarts, {total.Started:N0} calls, lost {lost}, stuck {total.Stuck}, errors outside fault windows {total.ErrorsOutside}, inside {total.ConnectionLost + total.Other - total.ErrorsOutside} (connection lost {total.ConnectionLost - total.ConnectionLostOutside}, other {total.Other - total.OtherOutside}), {memoryChange}: {(failures.Count == 0 ? "ok" : "FAILED (" + string.Join("; ", failures) + ")")}"));
        return failures.Count == 0 ? 0 : 1;
    }

    /// <summary>Stops the restart loop after its current restart; false if that takes too long.</summary>
    private static async Task<bool> StopRestartsAsync(CancellationTokenSource stop, Task restartLoop)
    {
        stop.Cancel();
        await restartLoop.WaitAsync(s_comeBackTimeout + s_serverStartTimeout).ContinueWith(static _ => { }, TaskScheduler.Default);
        return restartLoop.IsCompleted;
    }

    /// <summary>Every <paramref name="every"/>, kills the next server in turn, restarts it on its port
    /// <paramref name="down"/> later and waits for the client to be back on it, inside a fault window.</summary>
    private static async Task RestartLoopAsync(ServerProcess?[] servers, MuxClient client, SoakLedger ledger, List<RestartRecord> restarts, List<string> problems, long origin, TimeSpan every, TimeSpan down, TimeSpan duration, CancellationToken stop)
    {
        try
        {
            for (int n = 1; every * n + down + s_restartRoom <= duration; n++)
            {
                TimeSpan wait = every * n - Stopwatch.GetElapsedTime(origin);
                if (wait > TimeSpan.Zero)
                {
                    await Task.Delay(wait, stop);
                }

                int index = (n - 1) % servers.Length;
                ServerProcess victim = servers[index]!;
                int port = victim.Port;
                var endPoint = new IPEndPoint(IPAddress.Loopback, port);
                SoakCounts before = ledger.Counts;
                long killed = Stopwatch.GetTimestamp();
                int window = ledger.Windows.Open(killed);
                servers[index] = null; // before the process goes, so that the sampler never reads a disposed one
                victim.Kill();
                await victim.DisposeAsync();
                await WaitForStateAsync(client, endPoint, connected: false, s_stepTimeout);
                TimeSpan rest = down - Stopwatch.GetElapsedTime(killed);
                if (rest > TimeSpan.Zero)
                {
                    await Task.Delay(rest, CancellationToken.None);
                }

                ServerProcess replacement = await StartOnPortAsync(port);
                servers[index] = replacement;
                long listening = Stopwatch.GetTimestamp();
                if (!await WaitForStateAsync(client, endPoint, connected: true, s_comeBackTimeout))
                {
                    ledger.Windows.Close(window, After(Stopwatch.GetTimestamp(), s_windowTail));
                    lock (problems)
                    {
                        problems.Add($"the client was not back on the server at port {port} {s_comeBackTimeout.TotalSeconds:0} s after it restarted");
                    }

                    return;
                }

                long back = Stopwatch.GetTimestamp();
                ledger.Windows.Close(window, After(back, s_windowTail));
                await Task.Delay(s_windowTail, CancellationToken.None);
                var record = new RestartRecord(
                    n,
                    index,
                    port,
                    Stopwatch.GetElapsedTime(origin, killed).TotalSeconds,
                    Stopwatch.GetElapsedTime(killed, listening).TotalSeconds,
                    Stopwatch.GetElapsedTime(listening, back).TotalMilliseconds,
                    ledger.Counts - before);
                lock (restarts)
                {
                    restarts.Add(record);
                }

                Console.WriteLine("  " + record);
            }
        }
        catch (OperationCanceledException) when (stop.IsCancellationRequested)
        {
            // The run ended between restarts.
        }
        catch (Exception ex)
        {
            lock (problems)
            {
                problems.Add($"restarting a server: {ex.GetType().Name}: {ex.Message}");
            }
        }
    }

    /// <summary>A new server on the killed one's port; the port may be held for a moment (or taken
    /// by another process's connection), so a few attempts a second apart.</summary>
    private static async Task<ServerProcess> StartOnPortAsync(int port)
    {
        for (int attempt = 1; ; attempt++)
        {
            try
            {
                return await ServerProcess.StartAsync(BenchSystems.Mux, s_serverStartTimeout, port);
            }
            catch (InvalidOperationException) when (attempt < 10)
            {
                await Task.Delay(TimeSpan.FromSeconds(1));
            }
        }
    }

    /// <summary>Waits until the client's connection to <paramref name="endPoint"/> is (or is no longer) connected.</summary>
    private static async Task<bool> WaitForStateAsync(MuxClient client, EndPoint endPoint, bool connected, TimeSpan timeout)
    {
        long start = Stopwatch.GetTimestamp();
        while (Stopwatch.GetElapsedTime(start) < timeout)
        {
            foreach (MuxEndPointStatistics instance in client.GetEndPointStatistics())
            {
                if (instance.EndPoint.Equals(endPoint) && (instance.State == MuxClientState.Connected) == connected)
                {
                    return true;
                }
            }

            await Task.Delay(20);
        }

        return false;
    }

    private static long After(long timestamp, TimeSpan span) => timestamp + (long)(span.TotalSeconds * Stopwatch.Frequency);

    private static SoakSample Nearest(List<SoakSample> samples, double seconds) =>
        samples.MinBy(s => Math.Abs(s.Seconds - seconds))!;

    private static double Change(long from, long to) => from == 0 ? 0 : (double)(to - from) / from;

    private static double Mib(long bytes) => bytes / (1024.0 * 1024.0);

    /// <summary>The runner's memory after a full blocking collection, and each server's resident set.</summary>
    private sealed class MemorySampler(ServerProcess?[] servers)
    {
        // Full collections this sampler forced, left out of the gen2 count it reports.
        private int _forced;

        public SoakSample Take(double seconds, double intervalSeconds, SoakCounts interval, SoakCounts total)
        {
            long workingSetBefore = Environment.WorkingSet;
            GCMemoryInfo before = GC.GetGCMemoryInfo();
            int gen2 = GC.CollectionCount(2);
            // What the process holds, not what the GC happens to keep: between collections a 16 MiB
            // answer on the large object heap swings the heap by itself, and after one the GC keeps
            // freed regions committed for a while (measured: 16-48 MiB more in some runs than in
            // others). Aggressive compacts both heaps and gives the free regions back.
            GCSettings.LargeObjectHeapCompactionMode = GCLargeObjectHeapCompactionMode.CompactOnce;
            GC.Collect(2, GCCollectionMode.Aggressive, blocking: true, compacting: true);
            _forced += GC.CollectionCount(2) - gen2;
            GCMemoryInfo after = GC.GetGCMemoryInfo();
            long workingSet = Environment.WorkingSet;
            long[] rss = new long[servers.Length];
            for (int i = 0; i < servers.Length; i++)
            {
                rss[i] = servers[i] is { } server ? ResidentBytes(server) : 0;
            }

            return new SoakSample(seconds, workingSet, after.HeapSizeBytes, workingSetBefore, before.HeapSizeBytes, before.TotalCommittedBytes, StatusField("/proc/self/status", "RssAnon:") * 1024, StatusField("/proc/self/status", "RssFile:") * 1024, (int)StatusField("/proc/self/status", "Threads:"), GC.CollectionCount(2) - _forced, intervalSeconds > 0 ? interval.Completed / intervalSeconds : 0, interval, total, rss);
        }

        /// <summary>VmRSS from /proc/PID/status; 0 where there is none (not Linux, or the process is gone).</summary>
        private static long ResidentBytes(ServerProcess server)
        {
            try
            {
                return StatusField($"/proc/{server.ProcessId}/status", "VmRSS:") * 1024;
            }
            catch (InvalidOperationException)
            {
                return 0; // the process is gone
            }
        }

        /// <summary>A number from a /proc status file (the runner's own: its threads, and its resident
        /// set split into anonymous memory and mapped files, which grows as more code is first run);
        /// 0 where there is none.</summary>
        private static long StatusField(string path, string name)
        {
            try
            {
                foreach (string line in File.ReadLines(path))
                {
                    if (line.StartsWith(name, StringComparison.Ordinal))
                    {
                        string[] parts = line.Split([' ', '\t'], StringSplitOptions.RemoveEmptyEntries);
                        return long.Parse(parts[1], CultureInfo.InvariantCulture);
                    }
                }
            }
            catch (Exception ex) when (ex is IOException or UnauthorizedAccessException or FormatException)
            {
            }

            return 0;
        }
    }
}

/// <summary>One restart: when the server was killed, how long until its replacement listened and the
/// client was back on it, and how the calls made meanwhile ended.</summary>
internal sealed record RestartRecord(int Number, int Server, int Port, double KilledAtSeconds, double DownSeconds, double BackMilliseconds, SoakCounts During)
{
    public override string ToString() => string.Create(
        CultureInfo.InvariantCulture,
        $"restart {Number}: server {Server + 1} (port {Port}) killed at {KilledAtSeconds:0.0} s; new server listening {DownSeconds:0.0} s later; client back on it {BackMilliseconds:0} ms after that; in its window: connection lost {During.ConnectionLost}, other {During.Other}, ok {During.Ok:N0}");
}

/// <summary>One interval of a soak: memory after an aggressive full collection (with the resident set
/// split into anonymous memory and mapped files), and as it was just before (with the memory the GC
/// held from the system then, free or not); the threads; the runner's own gen2 collections, calls/s
/// and how the interval's calls ended.</summary>
internal sealed record SoakSample(
    double Seconds,
    long WorkingSetBytes,
    long HeapBytes,
    long WorkingSetBeforeGcBytes,
    long HeapBeforeGcBytes,
    long GcCommittedBeforeGcBytes,
    long AnonymousBytes,
    long FileBytes,
    int Threads,
    int Gen2,
    double CallsPerSecond,
    SoakCounts Interval,
    SoakCounts Total,
    long[] ServerResidentBytes)
{
    public const string ConsoleHeader = "elapsed  ws MiB  heap MiB  gen2   calls/s    ok  conn-lost  timeouts(exp)  cancels(exp)  other  outside  in flight  stuck  servers' RSS MiB";

    public static string CsvHeader(int servers) =>
        "elapsed_s,working_set_bytes,gc_heap_bytes,working_set_before_gc_bytes,gc_heap_before_gc_bytes,gc_committed_before_gc_bytes,rss_anon_bytes,rss_file_bytes,threads,gen2,calls_per_s,ok,connection_lost,expected_timeouts,expected_cancels,other,errors_outside_windows,calls_made,calls_ended,in_flight,stuck," +
        string.Join(",", Enumerable.Range(1, servers).Select(i => $"server{i}_rss_bytes"));

    public string ConsoleLine() => string.Create(
        CultureInfo.InvariantCulture,
        $"{Seconds,6:0}s {Mib(WorkingSetBytes),7:0.0} {Mib(HeapBytes),9:0.0} {Gen2,5} {CallsPerSecond,9:N0} {Interval.Ok,9:N0} {Interval.ConnectionLost,10:N0} {Interval.ExpectedTimeout,14:N0} {Interval.ExpectedCancel,13:N0} {Interval.Other,6:N0} {Interval.ErrorsOutside,8:N0} {Total.InFlight,10:N0} {Interval.Stuck,6:N0}  {string.Join(" / ", ServerResidentBytes.Select(b => b == 0 ? "-" : Mib(b).ToString("0", CultureInfo.InvariantCulture)))}");

    public string CsvLine(int servers) => string.Create(
        CultureInfo.InvariantCulture,
        $"{Seconds:0.0},{WorkingSetBytes},{HeapBytes},{WorkingSetBeforeGcBytes},{HeapBeforeGcBytes},{GcCommittedBeforeGcBytes},{AnonymousBytes},{FileBytes},{Threads},{Gen2},{CallsPerSecond:0},{Interval.Ok},{Interval.ConnectionLost},{Interval.ExpectedTimeout},{Interval.ExpectedCancel},{Interval.Other},{Total.ErrorsOutside},{Total.Started},{Total.Completed},{Total.InFlight},{Total.Stuck},") +
        string.Join(",", ServerResidentBytes.Take(servers));

    private static double Mib(long bytes) => bytes / (1024.0 * 1024.0);
}
