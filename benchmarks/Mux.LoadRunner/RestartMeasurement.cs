using System.Diagnostics;
using System.Globalization;
using System.Net;

namespace Mux.LoadRunner;

/// <summary>
/// --restart-server-after S: how long a Mux client with the default reconnect settings takes to
/// come back when its server restarts. The server runs as a child process; callers load one
/// client; every S seconds the server process is killed (no GoAway, no drain: a crash), and after
/// --server-down seconds a new server process is started on the same port. Reported per restart:
/// the time from the new server listening (it printed LISTENING) to the client's first successful
/// call, and the calls that failed during the outage, by kind.
/// </summary>
internal static class RestartMeasurement
{
    private static readonly TimeSpan s_serverStartTimeout = TimeSpan.FromSeconds(30);
    private static readonly TimeSpan s_stepTimeout = TimeSpan.FromSeconds(10);

    // A client must be back well within this after its server is: the default ReconnectMaxDelay
    // (5 s) plus a loaded machine's slack.
    private static readonly TimeSpan s_comeBackTimeout = TimeSpan.FromSeconds(60);

    public static async Task<int> RunAsync(RunnerOptions options)
    {
        string system = options.Systems[0];
        if (options.Systems.Count != 1 || system is not (BenchSystems.Mux or BenchSystems.MuxTls))
        {
            Console.Error.WriteLine("--restart-server-after measures one Mux system: add --systems mux (or mux-tls).");
            return 2;
        }

        AppDomain.CurrentDomain.ProcessExit += (_, _) => ServerProcess.KillAll();
        Console.CancelKeyPress += (_, _) => ServerProcess.KillAll();

        string method = options.Methods[0];
        int callers = options.Callers[0];
        var defaults = new MuxClientOptions();
        TimeSpan runBetween = TimeSpan.FromSeconds(options.RestartServerAfter!.Value);
        TimeSpan down = TimeSpan.FromSeconds(options.ServerDown);
        Console.WriteLine($"Mux restart measurement: {system}, {method}, {callers} callers on one client; the server process is killed after {runBetween.TotalSeconds:0.###} s of load and restarted on the same port {down.TotalSeconds:0.###} s later, {options.Restarts} time(s).");
        Console.WriteLine($"client: AutoReconnect on, ReconnectInitialDelay {defaults.ReconnectInitialDelay.TotalMilliseconds:0} ms, ReconnectMaxDelay {defaults.ReconnectMaxDelay.TotalMilliseconds:0} ms (the defaults), CallTimeout {defaults.CallTimeout.TotalSeconds:0} s");
        Console.WriteLine();

        ServerProcess server = await ServerProcess.StartAsync(system, s_serverStartTimeout);
        int port = server.Port;
        IBenchClient? client = null;
        var upToFirstCall = new List<double>();
        try
        {
            var endPoint = new IPEndPoint(IPAddress.Loopback, port);
            using (var connect = new CancellationTokenSource(s_stepTimeout))
            {
                client = await MuxBenchClient.ConnectAsync(endPoint, method, connect.Token, tls: system == BenchSystems.MuxTls);
            }

            var load = new RestartLoad(client, callers);
            for (int restart = 1; restart <= options.Restarts; restart++)
            {
                long callsBefore = load.Calls;
                await Task.Delay(runBetween);
                long callsWhileUp = load.Calls - callsBefore;

                ErrorSnapshot errorsBefore = load.Errors;
                long killed = Stopwatch.GetTimestamp();
                server.Kill();
                await server.DisposeAsync();
                await Task.Delay(down - Stopwatch.GetElapsedTime(killed) is { Ticks: > 0 } rest ? rest : TimeSpan.Zero);

                // Armed while no server is up: the next success can only come from the new one.
                Task<long> firstSuccess = load.ArmFirstSuccess();
                server = await ServerProcess.StartAsync(system, s_serverStartTimeout, port);
                long up = Stopwatch.GetTimestamp();
                long first = await firstSuccess.WaitAsync(s_comeBackTimeout);
                ErrorSnapshot outageErrors = load.Errors - errorsBefore;

                double upMs = Stopwatch.GetElapsedTime(killed, up).TotalMilliseconds;
                double backMs = Stopwatch.GetElapsedTime(up, first).TotalMilliseconds;
                upToFirstCall.Add(backMs);
                Console.WriteLine(string.Create(CultureInfo.InvariantCulture, $"restart {restart}: {callsWhileUp:N0} calls before the kill; new server listening {upMs:0} ms after the kill; server up -> first successful call {backMs:0} ms; failed during the outage: {outageErrors}"));
            }

            await load.StopAsync(s_stepTimeout);
            Console.WriteLine();
            upToFirstCall.Sort();
            double median = upToFirstCall.Count % 2 == 1
                ? upToFirstCall[upToFirstCall.Count / 2]
                : (upToFirstCall[(upToFirstCall.Count / 2) - 1] + upToFirstCall[upToFirstCall.Count / 2]) / 2;
            Console.WriteLine(string.Create(CultureInfo.InvariantCulture, $"server up -> first successful call over {upToFirstCall.Count} restart(s): median {median:0} ms, min {upToFirstCall[0]:0} ms, max {upToFirstCall[^1]:0} ms"));
            Console.WriteLine($"calls: {load.Calls:N0}  failed: {load.Errors}{(load.FirstError is null ? "" : $"  first: {load.FirstError}")}");

            // Only calls in flight at a kill may fail (at most one per caller per restart); more
            // would mean callers failing while the client reconnects.
            bool ok = load.Errors.Other == 0 && load.Errors.Timeout == 0 && load.Errors.Connection <= (long)callers * options.Restarts;
            if (!ok)
            {
                Console.WriteLine($"unexpected: more failures than calls in flight at the kills (at most {callers} per restart), or failures other than lost connections");
            }

            return ok ? 0 : 1;
        }
        catch (TimeoutException ex)
        {
            Console.WriteLine($"the client did not come back: {ex.Message}");
            return 1;
        }
        finally
        {
            if (client is not null)
            {
                await client.DisposeAsync().AsTask().WaitAsync(s_stepTimeout);
            }

            await server.DisposeAsync();
        }
    }
}
