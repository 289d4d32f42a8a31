using System.Diagnostics;
using System.Net;
using Mux.Samples.Contracts;
using Mux.Samples.Load;
using Mux.Tests.Infrastructure;

namespace Mux.Tests.Samples;

/// <summary>
/// What the load sample prints at its end and for --help, as a user and a script read them.
/// </summary>
public sealed class LoadSampleSummaryTests
{
    [Fact]
    public async Task TheConnectionCount_WhenTheServerHasGoneAway_IsUnknown_NullInTheJsonLine()
    {
        var server = new MuxServer(new MuxServerOptions { EndPoint = new IPEndPoint(IPAddress.Loopback, 0) });
        server.AddService<IUserService>(new UserService());
        server.AddService<ILoadStats>(new LoadStats(() => server.ConnectionsAccepted));
        await server.StartAsync().WaitAsync(TestHost.Patience);
        await using MuxClient client = await MuxClient.ConnectAsync(server.LocalEndPoint!);
        Assert.Equal(1, await LoadSummary.AskServerForConnectionsAsync(client).WaitAsync(TestHost.Patience));

        await server.DisposeAsync();
        await Hosts.WaitUntilAsync(() => client.State != MuxClientState.Connected, "the client has seen its server go");
        long? connections = await LoadSummary.AskServerForConnectionsAsync(client).WaitAsync(TestHost.Patience);

        Assert.Null(connections);
        LoadResult result = new(Calls: 10, new ErrorCounts(), Seconds: 1, P50Us: 5, P99Us: 9, Reconnects: 0);
        string json = LoadSummary.Json("add", 10, result, connections, interrupted: false, client.GetStatistics());
        Assert.Contains("\"connections\":null,", json, StringComparison.Ordinal);
        Assert.DoesNotContain("-1", json, StringComparison.Ordinal);
        Assert.Contains("connections: unknown (the server did not say)", LoadSummary.Line(result, connections, interrupted: false), StringComparison.Ordinal);
    }

    [Fact]
    public async Task TheConnectionCount_WhenKnown_IsTheNumberInBothLines()
    {
        var server = new MuxServer(new MuxServerOptions { EndPoint = new IPEndPoint(IPAddress.Loopback, 0) });
        server.AddService<IUserService>(new UserService());
        await server.StartAsync().WaitAsync(TestHost.Patience);
        await using (server)
        {
            await using MuxClient client = await MuxClient.ConnectAsync(server.LocalEndPoint!);
            LoadResult result = new(Calls: 10, new ErrorCounts(), Seconds: 1, P50Us: 5, P99Us: 9, Reconnects: 0);

            string json = LoadSummary.Json("add", 10, result, connections: 1, interrupted: false, client.GetStatistics());

            Assert.Contains("\"errors\":0,", json, StringComparison.Ordinal);
            Assert.Contains("\"connections\":1,", json, StringComparison.Ordinal);
            Assert.Contains("connections: 1  ", LoadSummary.Line(result, 1, interrupted: false), StringComparison.Ordinal);
        }
    }

    [Theory]
    [InlineData("--help")]
    [InlineData("-h")]
    public async Task Help_PrintsTheUsageOnStandardOutput_AndExitsZero(string flag)
    {
        (int exitCode, string output, string error) = await RunSampleAsync(flag);

        Assert.Equal(0, exitCode);
        Assert.StartsWith("Usage: Mux.Samples.Load", output.TrimStart(), StringComparison.Ordinal);
        Assert.Equal(string.Empty, error);
    }

    [Fact]
    public async Task AnUnknownOption_SaysSoOnStandardError_AndExitsTwo()
    {
        (int exitCode, string output, string error) = await RunSampleAsync("--bogus");

        Assert.Equal(2, exitCode);
        Assert.StartsWith("Unknown option '--bogus'.", error, StringComparison.Ordinal);
        Assert.Equal(string.Empty, output);
    }

    // Runs the sample's own build (copied beside the tests by the project reference) as a user would.
    private static async Task<(int ExitCode, string Output, string Error)> RunSampleAsync(string argument)
    {
        string dotnet = Environment.GetEnvironmentVariable("DOTNET_HOST_PATH") is { Length: > 0 } host ? host : "dotnet";
        var start = new ProcessStartInfo(dotnet)
        {
            RedirectStandardOutput = true,
            RedirectStandardError = true,
            UseShellExecute = false,
        };
        start.ArgumentList.Add(Path.Combine(AppContext.BaseDirectory, "Mux.Samples.Load.dll"));
        start.ArgumentList.Add(argument);
        using Process process = Process.Start(start)!;
        Task<string> output = process.StandardOutput.ReadToEndAsync();
        Task<string> error = process.StandardError.ReadToEndAsync();
        using var patience = new CancellationTokenSource(TestHost.Patience);
        try
        {
            await process.WaitForExitAsync(patience.Token);
        }
        catch (OperationCanceledException)
        {
            process.Kill(entireProcessTree: true);
            throw new TimeoutException($"Mux.Samples.Load {argument} did not exit within {TestHost.Patience.TotalSeconds} s.");
        }

        return (process.ExitCode, await output, await error);
    }
}
