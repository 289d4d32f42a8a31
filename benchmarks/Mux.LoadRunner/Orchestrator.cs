using System.Diagnostics;
using System.Net;
using Mux.LoadRunner.Peers;

namespace Mux.LoadRunner;

/// <summary>
/// Runs the sweep: for every point a fresh server child process, one client connection in this
/// process, warm-up, measured window, then the server's own counters over a control connection.
/// A failing point is reported in its row; the sweep goes on.
/// </summary>
internal static class Orchestrator
{
    private static readonly TimeSpan s_serverStartTimeout = TimeSpan.FromSeconds(30);
    private static readonly TimeSpan s_stepTimeout = TimeSpan.FromSeconds(10);

    // Callers of the discarded client warm-up run before each (system, method).
    private const int WarmupCallers = 10;

    public static async Task<int> RunAsync(RunnerOptions options)
    {
        AppDomain.CurrentDomain.ProcessExit += (_, _) => ServerProcess.KillAll();
        AppDomain.CurrentDomain.UnhandledException += (_, _) => ServerProcess.KillAll();
        Console.CancelKeyPress += (_, _) => ServerProcess.KillAll();

        DateTimeOffset started = DateTimeOffset.Now;
        var clock = Stopwatch.StartNew();
        MachineInfo machine = MachineInfo.Describe();
        string outDirectory = Report.ResolveOutDirectory(options.OutDirectory);

        var methods = options.Methods.Select(BenchMethod.Create).ToList();
        var table = new ResultTable(Console.Out);
        Console.WriteLine($"Mux load runner: {machine.Summary}");
        Console.WriteLine($"window {options.Seconds:0.###} s after {options.Warmup:0.###} s warm-up per point (plus one discarded client warm-up run per system and method); one connection per point; servers in child processes.");
        if (PassThroughInterceptor.Enabled)
        {
            Console.WriteLine("--interceptors: Mux servers and clients run one interceptor each that only awaits next().");
        }

        if (options.Metrics)
        {
            Console.WriteLine("--metrics: metrics on. The runner and each server process listen to every instrument of the \"Mux\" meter (a MeterListener keeping each instrument's count and sum).");
        }

        if (options.BlockingHandler)
        {
            Console.WriteLine($"--blocking-handler: in each window, one more caller on the connection calls a handler that blocks its server thread for {BlockingCaller.BlockFor.TotalSeconds:0} s, then waits {BlockingCaller.PauseFor.TotalSeconds:0} s, and again.");
        }

        foreach (BenchMethod method in methods)
        {
            Console.WriteLine($"  {method.Name,-8} {method.Description,-34} request frame {method.RequestFrameBytes} B, response frame {method.ResponseFrameBytes} B");
        }

        Console.WriteLine();
        table.WriteHeader();

        var points = new List<PointResult>();
        try
        {
            foreach (string system in options.Systems)
            {
                if (BenchSystems.Unavailable.TryGetValue(system, out string? reason))
                {
                    var unavailable = new PointResult { System = system, Method = "-", Callers = 0, Status = "unavailable" };
                    unavailable.ErrorMessages.Add("unavailable: " + reason);
                    points.Add(unavailable);
                    table.WriteRow(unavailable);
                    continue;
                }

                foreach (BenchMethod method in methods)
                {
                    await WarmUpClientAsync(system, method, options);
                    foreach (int callers in options.Callers)
                    {
                        PointResult point = await RunPointAsync(system, method, callers, TimeSpan.FromSeconds(options.Warmup), TimeSpan.FromSeconds(options.Seconds), options.BlockingHandler);
                        points.Add(point);
                        table.WriteRow(point);
                    }
                }
            }
        }
        finally
        {
            ServerProcess.KillAll();
        }

        clock.Stop();
        Console.WriteLine();
        table.WriteUnavailable(points);
        ScalingCounters.WriteTable(Console.Out, points);

        var report = new RunReport
        {
            Started = started,
            Finished = DateTimeOffset.Now,
            TotalSeconds = Math.Round(clock.Elapsed.TotalSeconds, 1),
            Machine = machine,
            Settings = new RunSettings
            {
                Systems = [.. options.Systems],
                Methods = [.. options.Methods],
                Callers = [.. options.Callers],
                Seconds = options.Seconds,
                Warmup = options.Warmup,
                Metrics = options.Metrics ? "on" : "off",
                BlockingHandler = options.BlockingHandler,
            },
            Methods = methods.Select(m => new MethodInfo { Name = m.Name, Call = m.Description, RequestFrameBytes = m.RequestFrameBytes, ResponseFrameBytes = m.ResponseFrameBytes }).ToList(),
            Points = points,
        };
        string[] written = Report.Write(report, outDirectory);
        Console.WriteLine($"total {clock.Elapsed.TotalSeconds:0.0} s for {points.Count(p => p.Status != "unavailable")} points");
        Console.WriteLine($"JSON, CSV, Markdown tables, SVG chart: {string.Join(", ", written)}");

        int failed = points.Count(p => p.Status == "error");
        if (failed > 0)
        {
            Console.WriteLine($"{failed} point(s) reported errors.");
            return 1;
        }

        return 0;
    }

    /// <summary>
    /// Every point gets a fresh server, but the client code runs in this one process: without this
    /// discarded run, the first point of each (system, method), the 1-caller one, would measure the
    /// client's first JIT tiers while later points measure optimized code.
    /// </summary>
    private static async Task WarmUpClientAsync(string system, BenchMethod method, RunnerOptions options)
    {
        if (options.Warmup <= 0)
        {
            return;
        }

        PointResult warmup = await RunPointAsync(system, method, WarmupCallers, TimeSpan.FromSeconds(options.Warmup), TimeSpan.FromSeconds(0.2), blockingHandler: false);
        if (warmup.Status != "ok")
        {
            Console.WriteLine($"(client warm-up of {system} {method.Name} failed: {string.Join("; ", warmup.ErrorMessages)})");
        }
    }

    private static async Task<PointResult> RunPointAsync(string system, BenchMethod method, int callers, TimeSpan warmup, TimeSpan windowLength, bool blockingHandler)
    {
        var point = new PointResult
        {
            System = system,
            Method = method.Name,
            Callers = callers,
            RequestFrameBytes = method.RequestFrameBytes,
            ResponseFrameBytes = method.ResponseFrameBytes,
        };
        var clock = Stopwatch.StartNew();
        await MeasureAsync(point, system, method, callers, warmup, windowLength, blockingHandler);
        if (point.Errors > 0 || point.ErrorMessages.Count > 0)
        {
            point.Status = "error";
        }

        point.PointSeconds = Math.Round(clock.Elapsed.TotalSeconds, 2);
        return point;
    }

    /// <summary>Fills <paramref name="point"/>; every failure becomes one of its error messages.</summary>
    private static async Task MeasureAsync(PointResult point, string system, BenchMethod method, int callers, TimeSpan warmup, TimeSpan windowLength, bool blockingHandler)
    {
        ServerProcess? server = null;
        IBenchClient? client = null;
        BlockingCaller? blocking = null;
        try
        {
            server = await ServerProcess.StartAsync(system, s_serverStartTimeout);
            var endPoint = new IPEndPoint(IPAddress.Loopback, server.Port);
            using (var connect = new CancellationTokenSource(s_stepTimeout))
            {
                Task<IBenchClient> connecting = system switch
                {
                    BenchSystems.Mux => MuxBenchClient.ConnectAsync(endPoint, method.Name, connect.Token),
                    BenchSystems.MuxTls => MuxBenchClient.ConnectAsync(endPoint, method.Name, connect.Token, tls: true),
                    BenchSystems.MuxWebSocket => MuxBenchClient.ConnectWebSocketAsync(endPoint, method.Name, connect.Token),
                    BenchSystems.RawSingle or BenchSystems.RawBatched => RawBenchClient.ConnectAsync(endPoint, system == BenchSystems.RawBatched, callers, method, connect.Token),
                    _ => PeerSystems.ConnectAsync(system, endPoint, method.Name, connect.Token),
                };
                client = await connecting.WaitAsync(s_stepTimeout);
            }

            await client.CallAsync(0).AsTask().WaitAsync(s_stepTimeout); // one checked call before the clock starts
            point.CoreToCoreNs = CoreToCore.MeasureNanoseconds();

            ProcessCounters clientBegin = default;
            ProcessCounters clientEnd = default;
            MachineCpu? machineBegin = null;
            MachineCpu? machineEnd = null;
            TransportCounters? transportBegin = null;
            TransportCounters? transportEnd = null;
            ServerProcess marked = server;
            IBenchClient measured = client;
            BlockWindows? blocks = null;
            if (blockingHandler)
            {
                blocks = new BlockWindows();
                blocking = new BlockingCaller((MuxBenchClient)client, blocks);
            }

            BlockingCaller? blocker = blocking;
            LoadWindow window = await ClosedLoop.RunAsync(
                client,
                callers,
                warmup,
                windowLength,
                onWindowStart: () =>
                {
                    marked.Mark("begin");
                    transportBegin = measured.GetCounters();
                    machineBegin = MachineCpu.Take();
                    clientBegin = ProcessCounters.Take();
                    blocker?.Start();
                },
                onWindowEnd: () =>
                {
                    clientEnd = ProcessCounters.Take();
                    machineEnd = MachineCpu.Take();
                    transportEnd = measured.GetCounters();
                    marked.Mark("end");
                },
                stopTimeout: s_stepTimeout,
                blocks);

            point.Calls = window.Calls;
            point.WindowSeconds = Math.Round(window.WindowSeconds, 3);
            point.CallsPerSecond = window.WindowSeconds > 0 ? Math.Round(window.Calls / window.WindowSeconds) : 0;
            point.P50Us = window.Latency.PercentileMicroseconds(50);
            point.P99Us = window.Latency.PercentileMicroseconds(99);
            point.P999Us = window.Latency.PercentileMicroseconds(99.9);
            point.MaxUs = window.Latency.MaxTicks / 10.0;
            point.Errors = window.Errors;
            if (window.FirstError is not null)
            {
                point.ErrorMessages.Add($"{window.Errors} call(s) failed; first: {window.FirstError}");
            }

            if (!window.StoppedCleanly)
            {
                point.ErrorMessages.Add($"callers still waiting {s_stepTimeout.TotalSeconds:0} s after the window closed");
            }

            if (blocking is not null)
            {
                BlockingSummary blocked = await blocking.StopAsync(s_stepTimeout);
                blocking = null;
                FillBlocking(point, blocked, window);
            }

            if (window.Failure is not null)
            {
                point.ErrorMessages.Add(window.Failure);
                return; // the finally below cleans up; the server may be gone, so no stats
            }

            ProcessCounters clientDelta = clientEnd - clientBegin;
            long calls = Math.Max(1, window.Calls);
            point.ClientCpuUsPerCall = Math.Round(clientDelta.Cpu.TotalMicroseconds / calls, 2);
            point.ClientBytesPerCall = Math.Round((double)clientDelta.AllocatedBytes / calls, 1);
            point.ClientGen0 = clientDelta.Gen0;
            point.ClientGen1 = clientDelta.Gen1;
            point.ClientGen2 = clientDelta.Gen2;
            bool metrics = MetricsTally.Current is not null && IsMux(system);
            if (metrics)
            {
                point.ClientMetricMeasurementsPerCall = Math.Round((double)clientDelta.MetricMeasurements / calls, 3);
            }

            TransportCounters? clientTransport = null;
            if (transportBegin is TransportCounters transportStart && transportEnd is TransportCounters transportStop)
            {
                TransportCounters transport = transportStop - transportStart;
                clientTransport = transport;
                point.ClientFramesPerSend = Ratio(transport.FramesSent, transport.SocketSends);
                point.ClientFramesPerReceive = Ratio(transport.FramesReceived, transport.SocketReceives);
            }

            using var statsTimeout = new CancellationTokenSource(s_stepTimeout);
            ServerStats stats = await client.GetServerStatsAsync(statsTimeout.Token).WaitAsync(s_stepTimeout);
            point.Connections = stats.ConnectionsAccepted - 1; // the control connection that asked
            if (stats.WindowMarked)
            {
                point.ServerCpuUsPerCall = Math.Round((double)stats.CpuMicroseconds / calls, 2);
                point.ServerBytesPerCall = Math.Round((double)stats.AllocatedBytes / calls, 1);
                point.ServerGen0 = stats.Gen0;
                point.ServerGen1 = stats.Gen1;
                point.ServerGen2 = stats.Gen2;
                if (metrics)
                {
                    point.ServerMetricMeasurementsPerCall = Math.Round((double)stats.MetricMeasurements / calls, 3);
                    if (clientDelta.MetricMeasurements == 0 || stats.MetricMeasurements == 0)
                    {
                        // A listener that saw nothing would make "metrics on" measure metrics off.
                        point.ErrorMessages.Add($"--metrics: the listeners took {clientDelta.MetricMeasurements} (client) and {stats.MetricMeasurements} (server) Mux measurements in the window");
                    }
                }

                point.ServerFramesPerSend = BenchSystems.IsRaw(system) || IsMux(system) ? Ratio(stats.FramesSent, stats.SocketSends) : null;
                if (IsMux(system) && clientTransport is TransportCounters clientConnection)
                {
                    ScalingCounters.Fill(point, calls, clientDelta, clientConnection, stats);
                }

                if (machineBegin is MachineCpu machineStart && machineEnd is MachineCpu machineStop && window.WindowSeconds > 0)
                {
                    // Everything the machine ran in the window that was not this point's two processes.
                    TimeSpan others = machineStop.Busy - machineStart.Busy - clientDelta.Cpu - TimeSpan.FromMicroseconds(stats.CpuMicroseconds);
                    point.OtherCpuCores = Math.Round(Math.Max(0, others.TotalSeconds) / window.WindowSeconds, 2);
                    point.StealCpuCores = Math.Round((machineStop.Steal - machineStart.Steal).TotalSeconds / window.WindowSeconds, 2);
                }
            }
            else
            {
                point.ErrorMessages.Add("the server did not receive both window marks");
            }

            if (window.Calls == 0)
            {
                point.ErrorMessages.Add("no call completed in the window");
            }
        }
        catch (Exception ex)
        {
            string message = $"{ex.GetType().Name}: {ex.Message}";
            if (server is not null && server.Stderr.Length > 0)
            {
                message += $" (server stderr: {server.Stderr})";
            }

            point.ErrorMessages.Add(message);
        }
        finally
        {
            if (blocking is not null)
            {
                // The window failed before the summary was taken: still stop the loop before the client goes.
                await blocking.StopAsync(s_stepTimeout);
            }

            if (client is not null)
            {
                try
                {
                    await client.DisposeAsync().AsTask().WaitAsync(s_stepTimeout);
                }
                catch (Exception ex)
                {
                    point.ErrorMessages.Add($"closing the client: {ex.GetType().Name}: {ex.Message}");
                }
            }

            if (server is not null)
            {
                await server.DisposeAsync();
            }
        }
    }

    private static void FillBlocking(PointResult point, BlockingSummary blocked, LoadWindow window)
    {
        point.BlockingCalls = blocked.Calls;
        point.BlockingCallMinMs = Math.Round(blocked.MinMilliseconds, 1);
        point.BlockingCallMaxMs = Math.Round(blocked.MaxMilliseconds, 1);
        if (blocked.Failure is not null)
        {
            point.ErrorMessages.Add("--blocking-handler: " + blocked.Failure);
        }

        if (window.DuringBlocks is LatencyHistogram during)
        {
            (point.CallsDuringBlocks, point.DuringBlocksP50Us, point.DuringBlocksP99Us, point.DuringBlocksP999Us, point.DuringBlocksMaxUs) = Summarize(during);
        }

        if (window.Quiet is LatencyHistogram quiet)
        {
            (point.QuietCalls, point.QuietP50Us, point.QuietP99Us, point.QuietP999Us, point.QuietMaxUs) = Summarize(quiet);
        }
    }

    /// <summary>A group's count, p50, p99, p99.9 and max in µs, as the point reports each group.</summary>
    private static (long?, double?, double?, double?, double?) Summarize(LatencyHistogram latencies) =>
        (latencies.Count, latencies.PercentileMicroseconds(50), latencies.PercentileMicroseconds(99), latencies.PercentileMicroseconds(99.9), latencies.MaxTicks / 10.0);

    private static bool IsMux(string system) => system is BenchSystems.Mux or BenchSystems.MuxTls or BenchSystems.MuxWebSocket;

    private static double Ratio(long frames, long operations) => operations == 0 ? 0 : Math.Round((double)frames / operations, 2);
}
