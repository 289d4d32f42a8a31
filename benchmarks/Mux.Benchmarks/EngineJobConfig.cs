using BenchmarkDotNet.Columns;
using BenchmarkDotNet.Configs;
using BenchmarkDotNet.Jobs;
using BenchmarkDotNet.Reports;
using BenchmarkDotNet.Running;
using Perfolizer.Horology;

namespace Mux.Benchmarks;

/// <summary>
/// The engine suites' job: <see cref="MuxJobConfig"/>'s counts (5 warmup and 15 measured
/// iterations of 250 ms, one launch) with no unrolling, since one invocation already sends or
/// parses tens of thousands of frames, plus a Frames/s column. As with MuxJobConfig, a job named on
/// the command line (<c>--job dry</c>, <c>--job short</c>) replaces this one.
/// </summary>
public sealed class EngineJobConfig : ManualConfig
{
    public EngineJobConfig()
    {
        AddJob(Job.Default
            .WithId("Engine")
            .WithLaunchCount(1)
            .WithWarmupCount(5)
            .WithIterationCount(15)
            .WithIterationTime(TimeInterval.FromMilliseconds(250))
            .WithUnrollFactor(1)
            .AsDefault());
        AddColumn(new FramesPerSecondColumn());
    }

    /// <summary>1 s / Mean: with OperationsPerInvoke set to the frames of one invocation, frames per second.</summary>
    private sealed class FramesPerSecondColumn : IColumn
    {
        public string Id => nameof(FramesPerSecondColumn);

        public string ColumnName => "Frames/s";

        public bool AlwaysShow => true;

        public ColumnCategory Category => ColumnCategory.Statistics;

        public int PriorityInCategory => 100;

        public bool IsNumeric => true;

        public UnitType UnitType => UnitType.Dimensionless;

        public string Legend => "Frames per second (1 s / Mean; one operation is one frame)";

        public bool IsAvailable(Summary summary) => true;

        public bool IsDefault(Summary summary, BenchmarkCase benchmarkCase) => false;

        public string GetValue(Summary summary, BenchmarkCase benchmarkCase) => GetValue(summary, benchmarkCase, summary.Style);

        public string GetValue(Summary summary, BenchmarkCase benchmarkCase, SummaryStyle style)
        {
            double? meanNanoseconds = summary[benchmarkCase]?.ResultStatistics?.Mean;
            return meanNanoseconds is > 0 ? (1e9 / meanNanoseconds.Value).ToString("N0", style.CultureInfo) : "NA";
        }
    }
}
