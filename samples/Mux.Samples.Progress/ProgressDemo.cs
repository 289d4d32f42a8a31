using System.Net;

namespace Mux.Samples.Progress;

/// <summary>A server and two clients in one process: each client runs a job on the server and
/// watches its own progress bar fill, reported by the server through calls back to that client.</summary>
public static class ProgressDemo
{
    /// <summary>Runs the demo, writing what happens to <paramref name="output"/>.</summary>
    /// <returns>Each job's summary, in the order the jobs were started.</returns>
    public static async Task<string[]> RunAsync(TextWriter output)
    {
        await using var server = new MuxServer(new MuxServerOptions { EndPoint = new IPEndPoint(IPAddress.Loopback, 0) });
        server.AddService<IJobs>(new Jobs());
        await server.StartAsync().ConfigureAwait(false);

        // Two clients, two connections: each gets the reports of its own job only.
        await using MuxClient backupClient = await MuxClient.ConnectAsync(server.LocalEndPoint!).ConfigureAwait(false);
        await using MuxClient reportClient = await MuxClient.ConnectAsync(server.LocalEndPoint!).ConfigureAwait(false);
        backupClient.AddService<IProgressSink>(new ProgressBar(output, stopAt: 101));
        reportClient.AddService<IProgressSink>(new ProgressBar(output, stopAt: 50));

        Task<string> backup = backupClient.CreateProxy<IJobs>().Run("backup", 4);
        Task<string> report = reportClient.CreateProxy<IJobs>().Run("report", 10);
        string[] results = await Task.WhenAll(backup, report).ConfigureAwait(false);
        foreach (string result in results)
        {
            output.WriteLine(result);
        }

        return results;
    }
}

/// <summary>A client's <see cref="IProgressSink"/>: prints each report, and asks the job to stop
/// once it reaches <c>stopAt</c> percent.</summary>
internal sealed class ProgressBar(TextWriter output, int stopAt) : IProgressSink
{
    public ValueTask<bool> Report(string job, int percent)
    {
        lock (output)
        {
            output.WriteLine($"{job,-7} [{new string('#', percent / 10),-10}] {percent,3}%");
        }

        return ValueTask.FromResult(percent < stopAt);
    }
}
