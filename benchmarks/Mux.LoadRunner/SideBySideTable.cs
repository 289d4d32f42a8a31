using System.Globalization;
using System.Text;

namespace Mux.LoadRunner;

/// <summary>
/// The run as Markdown, ready for docs/benchmarks.md: per method, one row per (callers, system)
/// with the columns a reader compares (calls/s, latency, CPU and bytes per call of both processes,
/// connections, the CPU other processes took), then Mux's calls/s over every other system's.
/// </summary>
internal static class SideBySideTable
{
    public static string Render(RunReport report)
    {
        var md = new StringBuilder();
        MachineInfo m = report.Machine;
        md.Append(CultureInfo.InvariantCulture, $"Run of {report.Started:yyyy-MM-dd HH:mm} ({report.TotalSeconds:0} s): {m.Summary}; window {report.Settings.Seconds} s after {report.Settings.Warmup} s warm-up per point.\n\n");
        foreach (MethodInfo method in report.Methods)
        {
            List<PointResult> points = [.. report.Points.Where(p => p.Method == method.Name)];
            if (points.Count == 0)
            {
                continue;
            }

            md.Append(CultureInfo.InvariantCulture, $"#### {method.Name}: {method.Call}\n\n");
            md.Append("| callers | system | calls/s | p50 µs | p99 µs | CPU µs/call (client + server) | B/call (client + server) | conns | other | errors |\n");
            md.Append("|---:|---|---:|---:|---:|---:|---:|---:|---:|---|\n");
            foreach (PointResult p in points.OrderBy(p => p.Callers).ThenBy(p => Array.IndexOf(BenchSystems.Runnable, p.System)))
            {
                md.Append(CultureInfo.InvariantCulture, $"| {p.Callers} | {p.System} | {p.CallsPerSecond:N0} | {Micro(p.P50Us)} | {Micro(p.P99Us)} | ");
                md.Append(CultureInfo.InvariantCulture, $"{p.ClientCpuUsPerCall + (p.ServerCpuUsPerCall ?? 0):0.0} ({p.ClientCpuUsPerCall:0.0} + {Optional(p.ServerCpuUsPerCall, "0.0")}) | ");
                md.Append(CultureInfo.InvariantCulture, $"{p.ClientBytesPerCall:0} + {Optional(p.ServerBytesPerCall, "0")} | {Optional(p.Connections, "0")} | {Optional(p.OtherCpuCores, "0.00")} | ");
                md.Append(p.ErrorMessages.Count == 0 ? "0" : string.Join("; ", p.ErrorMessages).Replace("|", "\\|", StringComparison.Ordinal)).Append(" |\n");
            }

            AppendRatios(md, points);
            md.Append('\n');
        }

        md.Append("CPU µs/call: CPU time of the client process plus the server process over the window, per call. ")
          .Append("conns: TCP connections the server accepted for the load. ")
          .Append("other: CPU cores that other processes on the machine used during the window (from /proc/stat); ")
          .Append("on a shared 2-core machine a point with other well above 0 ran with less than two cores.\n");
        return md.ToString();
    }

    /// <summary>Mux's calls/s divided by each other system's, at each caller count both ran cleanly.</summary>
    private static void AppendRatios(StringBuilder md, List<PointResult> points)
    {
        string[] others = [.. BenchSystems.Runnable.Where(s => s != BenchSystems.Mux && points.Any(p => p.System == s))];
        if (others.Length == 0 || !points.Any(p => p.System == BenchSystems.Mux))
        {
            return;
        }

        md.Append("\n| callers | ").AppendJoin(" | ", others.Select(s => "Mux / " + s)).Append(" |\n");
        md.Append("|---:|").AppendJoin("", others.Select(_ => "---:|")).Append('\n');
        foreach (int callers in points.Select(p => p.Callers).Distinct().Order())
        {
            PointResult? mux = Find(points, BenchSystems.Mux, callers);
            md.Append(CultureInfo.InvariantCulture, $"| {callers} |");
            foreach (string system in others)
            {
                PointResult? other = Find(points, system, callers);
                md.Append(mux is null || other is null || other.CallsPerSecond <= 0
                    ? " - |"
                    : string.Create(CultureInfo.InvariantCulture, $" {mux.CallsPerSecond / other.CallsPerSecond:0.00}× |"));
            }

            md.Append('\n');
        }
    }

    private static PointResult? Find(List<PointResult> points, string system, int callers) =>
        points.FirstOrDefault(p => p.System == system && p.Callers == callers && p.Status == "ok");

    private static string Micro(double us) => us.ToString(us < 100 ? "0.0" : "N0", CultureInfo.InvariantCulture);

    private static string Optional(double? value, string format) => value?.ToString(format, CultureInfo.InvariantCulture) ?? "?";

    private static string Optional(long? value, string format) => value?.ToString(format, CultureInfo.InvariantCulture) ?? "?";
}
