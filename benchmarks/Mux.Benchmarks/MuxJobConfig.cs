using BenchmarkDotNet.Configs;
using BenchmarkDotNet.Jobs;
using Perfolizer.Horology;

namespace Mux.Benchmarks;

/// <summary>
/// The job every suite runs with unless the command line names one (<c>--job short</c>,
/// <c>--job dry</c>, ...): it is marked as the default job, and BenchmarkDotNet drops default jobs
/// as soon as another job is given.
/// </summary>
/// <remarks>
/// Why not BenchmarkDotNet's own default job: it runs each benchmark until the statistics settle,
/// up to 100 iterations of 500 ms, which for our ~25 benchmarks can take well over half an hour on
/// the 2-core machines this project runs on. A fixed 5 warmup and 15 measured iterations of
/// 250 ms each (one launch) keep the whole suite at a few minutes, and 15 samples are still
/// enough for the error column to mean something. The calls over in-memory pipes hop threads and
/// share 2 cores with whatever else runs, so their spread is larger than the frame and
/// serialization benchmarks' whatever the iteration count; compare their medians.
/// </remarks>
public sealed class MuxJobConfig : ManualConfig
{
    public MuxJobConfig()
    {
        AddJob(Job.Default
            .WithId("Mux")
            .WithLaunchCount(1)
            .WithWarmupCount(5)
            .WithIterationCount(15)
            .WithIterationTime(TimeInterval.FromMilliseconds(250))
            .AsDefault());
    }
}
