using System.Globalization;
using System.Runtime;
using System.Runtime.InteropServices;
using System.Text;
using System.Text.Json;
using System.Text.Json.Serialization;

namespace Mux.LoadRunner;

/// <summary>The machine the run measured.</summary>
internal sealed class MachineInfo
{
    public int Cores { get; init; }

    public string CpuModel { get; init; } = "";

    public string Os { get; init; } = "";

    public string Runtime { get; init; } = "";

    public string Architecture { get; init; } = "";

    public string Gc { get; init; } = "";

    /// <summary>/proc/loadavg when the run started: other work on the machine skews the numbers.</summary>
    public string LoadAverage { get; init; } = "";

    [JsonIgnore]
    public string Summary => $"{Cores} cores, {CpuModel}, {Os}, {Runtime} {Architecture}, {Gc} GC, load average {LoadAverage}";

    public static MachineInfo Describe() => new()
    {
        Cores = Environment.ProcessorCount,
        CpuModel = CpuModelName(),
        Os = RuntimeInformation.OSDescription,
        Runtime = RuntimeInformation.FrameworkDescription,
        Architecture = RuntimeInformation.ProcessArchitecture.ToString(),
        Gc = (GCSettings.IsServerGC ? "server" : "workstation") + (GCSettings.LatencyMode == GCLatencyMode.Batch ? " non-concurrent" : " concurrent"),
        LoadAverage = ReadFirstLine("/proc/loadavg") ?? "unknown",
    };

    private static string CpuModelName()
    {
        try
        {
            foreach (string line in File.ReadLines("/proc/cpuinfo"))
            {
                if (line.StartsWith("model name", StringComparison.Ordinal))
                {
                    int colon = line.IndexOf(':', StringComparison.Ordinal);
                    return colon < 0 ? line : line[(colon + 1)..].Trim();
                }
            }
        }
        catch (IOException)
        {
        }
        catch (UnauthorizedAccessException)
        {
        }

        return "unknown";
    }

    private static string? ReadFirstLine(string path)
    {
        try
        {
            return File.Exists(path) ? File.ReadLines(path).FirstOrDefault()?.Trim() : null;
        }
        catch (IOException)
        {
            return null;
        }
    }
}

internal sealed class RunSettings
{
    public List<string> Systems { get; init; } = [];

    public List<string> Methods { get; init; } = [];

    public List<int> Callers { get; init; } = [];

    public double Seconds { get; init; }

    public double Warmup { get; init; }

    /// <summary>on: both processes listened to every instrument of the "Mux" meter (--metrics).</summary>
    public string Metrics { get; init; } = "off";

    /// <summary>Whether each window also ran the blocking caller (--blocking-handler).</summary>
    public bool BlockingHandler { get; init; }
}

internal sealed class MethodInfo
{
    public string Name { get; init; } = "";

    public string Call { get; init; } = "";

    public int RequestFrameBytes { get; init; }

    public int ResponseFrameBytes { get; init; }
}

internal sealed class RunReport
{
    public DateTimeOffset Started { get; init; }

    public DateTimeOffset Finished { get; init; }

    public double TotalSeconds { get; init; }

    public required MachineInfo Machine { get; init; }

    public required RunSettings Settings { get; init; }

    public List<MethodInfo> Methods { get; init; } = [];

    public List<PointResult> Points { get; init; } = [];
}

[JsonSourceGenerationOptions(WriteIndented = true, PropertyNamingPolicy = JsonKnownNamingPolicy.CamelCase, DefaultIgnoreCondition = JsonIgnoreCondition.WhenWritingNull)]
[JsonSerializable(typeof(RunReport))]
internal sealed partial class ReportJsonContext : JsonSerializerContext
{
}

/// <summary>Writes a run's JSON and CSV files.</summary>
internal static class Report
{
    /// <summary>--out, or artifacts/loadrunner under the repository root (the directory holding
    /// Mux.sln, searched upwards from the current directory), else under the current directory.
    /// .gitignore ignores artifacts/.</summary>
    public static string ResolveOutDirectory(string? requested)
    {
        if (requested is not null)
        {
            return Path.GetFullPath(requested);
        }

        for (DirectoryInfo? directory = new(Directory.GetCurrentDirectory()); directory is not null; directory = directory.Parent)
        {
            if (File.Exists(Path.Combine(directory.FullName, "Mux.sln")))
            {
                return Path.Combine(directory.FullName, "artifacts", "loadrunner");
            }
        }

        return Path.Combine(Directory.GetCurrentDirectory(), "artifacts", "loadrunner");
    }

    /// <summary>Writes the JSON and CSV of every point, the Markdown side-by-side tables and the SVG chart; returns their paths.</summary>
    public static string[] Write(RunReport report, string directory)
    {
        Directory.CreateDirectory(directory);
        string stem = Path.Combine(directory, "loadrunner-" + report.Started.ToString("yyyyMMdd-HHmmss", CultureInfo.InvariantCulture));
        string json = stem + ".json";
        string csv = stem + ".csv";
        string markdown = stem + ".md";
        string chart = stem + ".svg";
        File.WriteAllText(json, JsonSerializer.Serialize(report, ReportJsonContext.Default.RunReport) + "\n");
        File.WriteAllText(csv, ToCsv(report));
        File.WriteAllText(markdown, SideBySideTable.Render(report));
        File.WriteAllText(chart, ThroughputChart.Render(report));
        return [json, csv, markdown, chart];
    }

    private static string ToCsv(RunReport report)
    {
        var csv = new StringBuilder();
        MachineInfo m = report.Machine;
        csv.Append(CultureInfo.InvariantCulture, $"# {m.Cores} cores; {m.CpuModel}; {m.Os}; {m.Runtime}; {m.Gc} GC; load average {m.LoadAverage}; window {report.Settings.Seconds} s; warm-up {report.Settings.Warmup} s; metrics {report.Settings.Metrics}{(report.Settings.BlockingHandler ? "; blocking handler" : "")}\n");
        csv.Append("system,method,callers,status,request_frame_bytes,response_frame_bytes,calls,window_s,calls_per_s,p50_us,p99_us,p999_us,max_us,")
           .Append("client_cpu_us_per_call,server_cpu_us_per_call,client_bytes_per_call,server_bytes_per_call,")
           .Append("client_gen0,client_gen1,client_gen2,server_gen0,server_gen1,server_gen2,connections,")
           .Append("client_frames_per_send,client_frames_per_receive,server_frames_per_send,other_cpu_cores,steal_cpu_cores,errors,error_messages,point_s,")
           .Append("client_work_items_per_call,server_work_items_per_call,client_lock_contentions_per_call,server_lock_contentions_per_call,")
           .Append("client_voluntary_context_switches_per_call,server_voluntary_context_switches_per_call,")
           .Append("client_involuntary_context_switches_per_call,server_involuntary_context_switches_per_call,")
           .Append("client_socket_sends_per_call,server_socket_sends_per_call,client_socket_receives_per_call,server_socket_receives_per_call,")
           .Append("client_reader_us_per_call,server_reader_us_per_call,client_writer_us_per_call,server_writer_us_per_call,serial_ceiling_calls_per_s,")
           .Append("client_metric_measurements_per_call,server_metric_measurements_per_call,")
           .Append("blocking_calls,blocking_call_min_ms,blocking_call_max_ms,calls_during_blocks,during_blocks_p50_us,during_blocks_p99_us,during_blocks_p999_us,during_blocks_max_us,")
           .Append("quiet_calls,quiet_p50_us,quiet_p99_us,quiet_p999_us,quiet_max_us,")
           .Append("client_jit_methods,server_jit_methods,core_to_core_ns\n");
        foreach (PointResult p in report.Points)
        {
            object?[] values =
            [
                p.System, p.Method, p.Callers, p.Status, p.RequestFrameBytes, p.ResponseFrameBytes, p.Calls, p.WindowSeconds,
                p.CallsPerSecond, p.P50Us, p.P99Us, p.P999Us, p.MaxUs,
                p.ClientCpuUsPerCall, p.ServerCpuUsPerCall, p.ClientBytesPerCall, p.ServerBytesPerCall,
                p.ClientGen0, p.ClientGen1, p.ClientGen2, p.ServerGen0, p.ServerGen1, p.ServerGen2, p.Connections,
                p.ClientFramesPerSend, p.ClientFramesPerReceive, p.ServerFramesPerSend, p.OtherCpuCores, p.StealCpuCores, p.Errors, string.Join(" | ", p.ErrorMessages), p.PointSeconds,
                p.ClientWorkItemsPerCall, p.ServerWorkItemsPerCall, p.ClientLockContentionsPerCall, p.ServerLockContentionsPerCall,
                p.ClientVoluntaryContextSwitchesPerCall, p.ServerVoluntaryContextSwitchesPerCall,
                p.ClientInvoluntaryContextSwitchesPerCall, p.ServerInvoluntaryContextSwitchesPerCall,
                p.ClientSocketSendsPerCall, p.ServerSocketSendsPerCall, p.ClientSocketReceivesPerCall, p.ServerSocketReceivesPerCall,
                p.ClientReaderUsPerCall, p.ServerReaderUsPerCall, p.ClientWriterUsPerCall, p.ServerWriterUsPerCall, p.SerialCeilingCallsPerSecond,
                p.ClientMetricMeasurementsPerCall, p.ServerMetricMeasurementsPerCall,
                p.BlockingCalls, p.BlockingCallMinMs, p.BlockingCallMaxMs, p.CallsDuringBlocks, p.DuringBlocksP50Us, p.DuringBlocksP99Us, p.DuringBlocksP999Us, p.DuringBlocksMaxUs,
                p.QuietCalls, p.QuietP50Us, p.QuietP99Us, p.QuietP999Us, p.QuietMaxUs,
                p.ClientJitMethods, p.ServerJitMethods, p.CoreToCoreNs,
            ];
            csv.AppendJoin(',', values.Select(Field)).Append('\n');
        }

        return csv.ToString();
    }

    private static string Field(object? value)
    {
        string text = value switch
        {
            null => "",
            IFormattable formattable => formattable.ToString(null, CultureInfo.InvariantCulture),
            _ => value.ToString() ?? "",
        };
        return text.AsSpan().IndexOfAny(",\"\n\r") >= 0 ? "\"" + text.Replace("\"", "\"\"", StringComparison.Ordinal) + "\"" : text;
    }
}

/// <summary>The console table: one row per point, written as soon as the point finishes.</summary>
internal sealed class ResultTable(TextWriter output)
{
    private const string Format = "{0,-11} {1,-7} {2,7} {3,10} {4,8} {5,8} {6,8} {7,7} {8,7} {9,8} {10,8} {11,9} {12,9} {13,5} {14,7} {15,7} {16,7} {17,5}  {18}";

    public void WriteHeader()
    {
        output.WriteLine(string.Format(CultureInfo.InvariantCulture, Format,
            "system", "method", "callers", "calls/s", "p50 us", "p99 us", "p99.9 us", "cCPU/c", "sCPU/c", "cB/call", "sB/call",
            "cGC0/1/2", "sGC0/1/2", "conns", "cfr/snd", "cfr/rcv", "sfr/snd", "other", "errors"));
        output.WriteLine(new string('-', 176));
        output.Flush();
    }

    public void WriteRow(PointResult p)
    {
        if (p.Status == "unavailable")
        {
            output.WriteLine($"{p.System,-11} {"-",-7} {"-",7} unavailable (see below)");
            output.Flush();
            return;
        }

        string errors = p.ErrorMessages.Count == 0 ? "0" : string.Join("; ", p.ErrorMessages);
        output.WriteLine(string.Format(CultureInfo.InvariantCulture, Format,
            p.System, p.Method, p.Callers, p.CallsPerSecond.ToString("N0", CultureInfo.InvariantCulture),
            Micro(p.P50Us), Micro(p.P99Us), Micro(p.P999Us),
            p.ClientCpuUsPerCall.ToString("0.0", CultureInfo.InvariantCulture),
            p.ServerCpuUsPerCall?.ToString("0.0", CultureInfo.InvariantCulture) ?? "?",
            p.ClientBytesPerCall.ToString("0", CultureInfo.InvariantCulture),
            p.ServerBytesPerCall?.ToString("0", CultureInfo.InvariantCulture) ?? "?",
            $"{p.ClientGen0}/{p.ClientGen1}/{p.ClientGen2}",
            p.ServerGen0 is null ? "?" : $"{p.ServerGen0}/{p.ServerGen1}/{p.ServerGen2}",
            p.Connections?.ToString(CultureInfo.InvariantCulture) ?? "?",
            p.ClientFramesPerSend?.ToString("0.0", CultureInfo.InvariantCulture) ?? "-",
            p.ClientFramesPerReceive?.ToString("0.0", CultureInfo.InvariantCulture) ?? "-",
            p.ServerFramesPerSend?.ToString("0.0", CultureInfo.InvariantCulture) ?? "-",
            p.OtherCpuCores?.ToString("0.00", CultureInfo.InvariantCulture) ?? "?",
            errors));
        if (p.ClientMetricMeasurementsPerCall is not null || p.ServerMetricMeasurementsPerCall is not null)
        {
            output.WriteLine(string.Format(CultureInfo.InvariantCulture,
                "  metrics on: \"Mux\" meter measurements per call, client {0:0.000}, server {1:0.000}",
                p.ClientMetricMeasurementsPerCall, p.ServerMetricMeasurementsPerCall));
        }

        if (p.BlockingCalls is not null)
        {
            output.WriteLine(string.Format(CultureInfo.InvariantCulture,
                "  blocking handler: {0} blocking call(s) of {1:0}-{2:0} ms; the other calls overlapping one: {3:N0}, p50 {4} p99 {5} p99.9 {6} max {7} us; the rest: {8:N0}, p50 {9} p99 {10} p99.9 {11} max {12} us",
                p.BlockingCalls, p.BlockingCallMinMs, p.BlockingCallMaxMs,
                p.CallsDuringBlocks, Micro(p.DuringBlocksP50Us ?? 0), Micro(p.DuringBlocksP99Us ?? 0), Micro(p.DuringBlocksP999Us ?? 0), Micro(p.DuringBlocksMaxUs ?? 0),
                p.QuietCalls, Micro(p.QuietP50Us ?? 0), Micro(p.QuietP99Us ?? 0), Micro(p.QuietP999Us ?? 0), Micro(p.QuietMaxUs ?? 0)));
        }

        output.Flush();
    }

    public void WriteUnavailable(IEnumerable<PointResult> points)
    {
        foreach (PointResult p in points.Where(p => p.Status == "unavailable"))
        {
            output.WriteLine($"{p.System}: {p.ErrorMessages[0]}");
        }

        output.WriteLine("""
            Columns: latencies in microseconds (closed loop, per-caller log-linear histograms, merged);
            cCPU/c, sCPU/c = client / server process CPU microseconds per call; cB/call, sB/call = bytes
            allocated per call; cGC, sGC = gen0/gen1/gen2 collections in the window; conns = TCP
            connections the server accepted for the load; cfr/snd, cfr/rcv = client frames per socket
            send / receive (- where the library does not expose them: grpc, streamjsonrpc, signalr);
            sfr/snd = raw and Mux server frames per socket send (- for the peers);
            other = CPU cores used by other processes during the window (/proc/stat): well above 0 means
            the point shared the machine and its numbers are low.
            """);
        output.Flush();
    }

    private static string Micro(double us) => us.ToString(us < 100 ? "0.0" : "0", CultureInfo.InvariantCulture);
}
