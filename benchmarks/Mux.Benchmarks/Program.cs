using BenchmarkDotNet.Configs;
using BenchmarkDotNet.Exporters;
using BenchmarkDotNet.Exporters.Csv;
using BenchmarkDotNet.Reports;
using BenchmarkDotNet.Running;
using Mux.Benchmarks.AllocationProbe;

// dotnet run -c Release --project benchmarks/Mux.Benchmarks -- --filter '*'   every suite
// dotnet run -c Release --project benchmarks/Mux.Benchmarks -- --alloc-probe   client vs server allocations
// dotnet run -c Release --project benchmarks/Mux.Benchmarks -- --filter '*Telemetry*' --job short   tracing and metrics cost per call
// dotnet run -c Release --project benchmarks/Mux.Benchmarks -- --filter '*Engine*'   the outbound path (1-64 senders) and the reader loop alone, frames/s (a few minutes)
// dotnet run -c Release --project benchmarks/Mux.Benchmarks -- --filter '*CallStructure*'   call table, ids and count against the simple structures, 1-64 threads (about 8 minutes)
if (args is ["--alloc-probe"])
{
    return await AllocationProbeRunner.RunAsync(Console.Out);
}

// Reports go to BenchmarkDotNet.Artifacts/results/ under the working directory: GitHub markdown,
// CSV and HTML. BenchmarkDotNet's defaults include those three exporters; adding one that is
// already there draws a warning, so only the missing ones are added, should the defaults change.
// BenchmarkDotNet builds a project of its own for each run and gives up after 2 minutes by default;
// on our shared 2-core machines, with other builds running, that build alone can take longer.
IConfig config = DefaultConfig.Instance
    .WithArtifactsPath(Path.Combine(Directory.GetCurrentDirectory(), "BenchmarkDotNet.Artifacts"))
    .WithBuildTimeout(TimeSpan.FromMinutes(10));
foreach (IExporter exporter in new IExporter[] { MarkdownExporter.GitHub, CsvExporter.Default, HtmlExporter.Default })
{
    if (!config.GetExporters().Contains(exporter))
    {
        config = config.AddExporter(exporter);
    }
}

// A benchmark that could not be built or run leaves an empty row behind; the exit code says so,
// for CI's smoke run and for scripts.
Summary[] summaries = BenchmarkSwitcher.FromAssembly(typeof(Program).Assembly).Run(args, config).ToArray();
bool failed = summaries.Any(s => s.HasCriticalValidationErrors || s.Reports.Any(r => !r.Success));
return failed ? 1 : 0;
