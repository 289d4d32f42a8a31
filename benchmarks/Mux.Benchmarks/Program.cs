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

// Reports go to BenchmarkDotNet.Artifacts/results/ under the working directory: GitHub markdown,
// CSV and HTML. BenchmarkDotNet's defaults include those three exporters; adding one that is
// already there draws a warning, so only the missing ones are added, should the defaults change.
IConfig config = DefaultConfig.Instance.WithArtifactsPath(Path.Combine(Directory.GetCurrentDirectory(), "BenchmarkDotNet.Artifacts"));
foreach (IExporter exporter in new IExporter[] { MarkdownExporter.GitHub, CsvExporter.Default, HtmlExporter.Default })
{
    if (!config.GetExporters().Contains(exporter))
    {
        config = config.AddExporter(exporter);
    }
}

BenchmarkSwitcher.FromAssembly(typeof(Program).Assembly).Run(args, config);
return 0;
