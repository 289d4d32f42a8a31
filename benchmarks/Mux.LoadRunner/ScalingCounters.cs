using System.Globalization;

namespace Mux.LoadRunner;

/// <summary>
/// Turns a Mux point's window counters into the per-call figures that predict how one connection
/// scales with cores (issue 24): work items, lock contentions, context switches, socket operations
/// and the two serial stages' µs per call, per process, and the ceiling the busiest stage puts on
/// calls/s. docs/benchmarks.md, "Counters that predict scaling", says what each one counts.
/// </summary>
internal static class ScalingCounters
{
    public static void Fill(PointResult point, long calls, ProcessCounters client, TransportCounters clientConnection, ServerStats server)
    {
        point.ClientWorkItemsPerCall = PerCall(client.WorkItems, calls);
        point.ServerWorkItemsPerCall = PerCall(server.WorkItems, calls);
        point.ClientLockContentionsPerCall = PerCall(client.LockContentions, calls);
        point.ServerLockContentionsPerCall = PerCall(server.LockContentions, calls);
        point.ClientJitMethods = client.JitMethods;
        point.ServerJitMethods = server.JitMethods;
        if (ContextSwitches.Available)
        {
            point.ClientVoluntaryContextSwitchesPerCall = PerCall(client.VoluntaryContextSwitches, calls);
            point.ClientInvoluntaryContextSwitchesPerCall = PerCall(client.InvoluntaryContextSwitches, calls);
            point.ServerVoluntaryContextSwitchesPerCall = PerCall(server.VoluntaryContextSwitches, calls);
            point.ServerInvoluntaryContextSwitchesPerCall = PerCall(server.InvoluntaryContextSwitches, calls);
        }

        point.ClientSocketSendsPerCall = PerCall(clientConnection.SocketSends, calls);
        point.ClientSocketReceivesPerCall = PerCall(clientConnection.SocketReceives, calls);
        point.ServerSocketSendsPerCall = PerCall(server.SocketSends, calls);
        point.ServerSocketReceivesPerCall = PerCall(server.SocketReceives, calls);

        double clientReader = clientConnection.Stages.ReaderMicroseconds / calls;
        double clientWriter = clientConnection.Stages.WriterMicroseconds / calls;
        double serverReader = server.ReaderMicroseconds / calls;
        double serverWriter = server.WriterMicroseconds / calls;
        point.ClientReaderUsPerCall = Math.Round(clientReader, 4);
        point.ClientWriterUsPerCall = Math.Round(clientWriter, 4);
        point.ServerReaderUsPerCall = Math.Round(serverReader, 4);
        point.ServerWriterUsPerCall = Math.Round(serverWriter, 4);
        double busiest = Math.Max(Math.Max(clientReader, clientWriter), Math.Max(serverReader, serverWriter));
        point.SerialCeilingCallsPerSecond = busiest > 0 ? Math.Round(1e6 / busiest) : null;
    }

    // Five decimals: a lock contention or a context switch every 10,000 calls still shows.
    private static double PerCall(long count, long calls) => Math.Round((double)count / calls, 5);

    /// <summary>The console's second table: one compact row per Mux point with these counters,
    /// each cell client/server. Writes nothing when no point has them.</summary>
    public static void WriteTable(TextWriter output, IReadOnlyList<PointResult> points)
    {
        const string Format = "{0,-11} {1,-7} {2,7} {3,11} {4,15} {5,13} {6,13} {7,11} {8,11} {9,11} {10,11} {11,11} {12,11} {13,8}";
        bool header = false;
        foreach (PointResult p in points)
        {
            if (p.SerialCeilingCallsPerSecond is null && p.ClientWorkItemsPerCall is null)
            {
                continue;
            }

            if (!header)
            {
                output.WriteLine();
                output.WriteLine("Counters that predict scaling, per call, client/server (docs/benchmarks.md):");
                output.WriteLine(string.Format(CultureInfo.InvariantCulture, Format,
                    "system", "method", "callers", "work items", "lock cont.", "cswitch vol", "cswitch invol", "sends", "receives", "reader us", "writer us", "ceiling/s", "jit", "c2c ns"));
                output.WriteLine(new string('-', 169));
                header = true;
            }

            output.WriteLine(string.Format(CultureInfo.InvariantCulture, Format,
                p.System, p.Method, p.Callers,
                Pair(p.ClientWorkItemsPerCall, p.ServerWorkItemsPerCall, "0.00"),
                Pair(p.ClientLockContentionsPerCall, p.ServerLockContentionsPerCall, "0.0000"),
                Pair(p.ClientVoluntaryContextSwitchesPerCall, p.ServerVoluntaryContextSwitchesPerCall, "0.000"),
                Pair(p.ClientInvoluntaryContextSwitchesPerCall, p.ServerInvoluntaryContextSwitchesPerCall, "0.000"),
                Pair(p.ClientSocketSendsPerCall, p.ServerSocketSendsPerCall, "0.000"),
                Pair(p.ClientSocketReceivesPerCall, p.ServerSocketReceivesPerCall, "0.000"),
                Pair(p.ClientReaderUsPerCall, p.ServerReaderUsPerCall, "0.000"),
                Pair(p.ClientWriterUsPerCall, p.ServerWriterUsPerCall, "0.000"),
                p.SerialCeilingCallsPerSecond?.ToString("N0", CultureInfo.InvariantCulture) ?? "-",
                $"{p.ClientJitMethods}/{p.ServerJitMethods}",
                p.CoreToCoreNs?.ToString("0", CultureInfo.InvariantCulture) ?? "-"));
        }

        if (header)
        {
            output.WriteLine("""
                work items = thread-pool work items completed; lock cont. = lock contentions; cswitch = context
                switches (getrusage, every thread); sends, receives = socket operations; reader us, writer us =
                time the connection's reader loop and writer role spent (the library's stage clock); ceiling/s =
                1e6 / the largest of the four stage figures; jit = methods each process JIT-compiled in the window
                (tier-up included: well above 0, the window measured code still warming up); c2c ns = one cache line's
                round trip between cores 0 and 1 just before the window (several times its usual value: the machine's
                cores sit far apart, and every per-call figure rises with it).
                """);
        }

        output.Flush();
    }

    private static string Pair(double? client, double? server, string format) =>
        $"{client?.ToString(format, CultureInfo.InvariantCulture) ?? "-"}/{server?.ToString(format, CultureInfo.InvariantCulture) ?? "-"}";
}
