using BenchmarkDotNet.Configs;
using BenchmarkDotNet.Exporters;
using BenchmarkDotNet.Exporters.Csv;
using BenchmarkDotNet.Running;
using Mux.Benchmarks.AllocationProbe;

// dotnet run -c Release --project benchmarks/Mux.Benchmarks -- --filter '*'   every suite
// dotnet run -c Release --project benchmarks/Mux.Benchmarks -- --alloc-probe   client vs server allocations
if (args is ["--alloc-probe"])
{
    return await AllocationProbeRunner.RunAsync(Console.Out);
}

// BenchmarkDotNet's defaults already export these three; listed so the reports cannot silently
// go away. They land in BenchmarkDotNet.Artifacts/results/ under the working directory.
IConfig config = DefaultConfig.Instance
    .AddExporter(MarkdownExporter.GitHub, CsvExporter.Default, HtmlExporter.Default)
    .WithArtifactsPath(Path.Combine(Directory.GetCurrentDirectory(), "BenchmarkDotNet.Artifacts"));

BenchmarkSwitcher.FromAssembly(typeof(Program).Assembly).Run(args, config);
return 0;
