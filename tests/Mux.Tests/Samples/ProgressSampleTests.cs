using Mux.Samples.Progress;
using Mux.Tests.Infrastructure;

namespace Mux.Tests.Samples;

/// <summary>The progress sample (samples/Mux.Samples.Progress): a server that calls its clients back.</summary>
public sealed class ProgressSampleTests
{
    [Fact]
    public async Task EachClient_SeesOnlyItsOwnJobsProgress_AndAClientCanStopItsJobFromItsProgressSink()
    {
        var output = new StringWriter();

        string[] results = await ProgressDemo.RunAsync(output).WaitAsync(TestHost.Patience);

        Assert.Equal(["backup done in 4 steps", "report stopped by the client after step 5 of 10"], results);
        string[] lines = output.ToString().Split(Environment.NewLine, StringSplitOptions.RemoveEmptyEntries);
        Assert.Equal(["backup  [##        ]  25%", "backup  [#####     ]  50%", "backup  [#######   ]  75%", "backup  [##########] 100%"], lines.Where(l => l.StartsWith("backup  [", StringComparison.Ordinal)).ToArray());
        Assert.Equal(5, lines.Count(l => l.StartsWith("report  [", StringComparison.Ordinal)));
        Assert.Contains("report  [#####     ]  50%", lines);
    }
}
