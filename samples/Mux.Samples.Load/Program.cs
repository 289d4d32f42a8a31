using System.Net;
using System.Text.Json;
using Mux;
using Mux.Samples.Contracts;
using Mux.Samples.Load;

LoadOptions options;
try
{
    options = LoadOptions.Parse(args);
}
catch (ArgumentException ex)
{
    Console.Error.WriteLine(ex.Message);
    Console.Error.WriteLine(LoadOptions.Usage);
    return 2;
}

using var signals = new StopSignals();

if (options.Serve is not null)
{
    await using MuxServer standalone = StartServer(options.Serve);
    await standalone.StartAsync();
    Console.WriteLine($"Serving IUserService on {standalone.LocalEndPoint}; Ctrl+C to stop.");
    await Task.Delay(Timeout.Infinite, signals.Token).ConfigureAwait(ConfigureAwaitOptions.SuppressThrowing);
    return 0;
}

MuxServer? server = null;
EndPoint target;
if (options.Connect is null)
{
    server = StartServer(new IPEndPoint(IPAddress.Loopback, 0));
    await server.StartAsync();
    target = server.LocalEndPoint!;
}
else
{
    target = options.Connect;
}

try
{
    await using MuxClient client = await MuxClient.ConnectAsync(target);
    IUserService users = client.CreateProxy<IUserService>();
    string duration = options.Seconds == 0 ? "until Ctrl+C" : $"{options.Seconds} s";
    Console.WriteLine($"Mux load: {options.Callers} callers, one connection to {target}, method {options.Method}, {duration}.");

    LoadResult? result = await LoadRunner.RunAsync(client, users, options, Console.Out, signals.Token);
    if (result is null)
    {
        Console.WriteLine("Stopped before the first call completed: nothing to report.");
        return 0;
    }

    MuxConnectionStatistics stats = client.GetStatistics();
    long connections = server?.ConnectionsAccepted ?? await AskServerForConnectionsAsync(client);
    bool interrupted = signals.Token.IsCancellationRequested;

    Console.WriteLine($"calls: {result.Calls:N0}  errors: {result.Errors}  calls/s: {result.CallsPerSecond:N0}  p50: {result.P50Us} us  p99: {result.P99Us} us  connections: {connections}  reconnects: {result.Reconnects}{(interrupted ? "  (stopped by signal)" : string.Empty)}");
    Console.WriteLine($"client frames/flush: {stats.FramesPerFlush:F1}  frames/socket send: {stats.FramesPerSocketSend:F1}  frames/socket receive: {stats.FramesPerSocketReceive:F1}");
    if (result.Errors.First is not null)
    {
        Console.WriteLine($"first error: {result.Errors.First}");
    }

    // "errors" stays the total, first of the error fields: CI greps for "errors":0,
    var summary = new Dictionary<string, object>
    {
        ["system"] = "mux",
        ["method"] = options.Method,
        ["callers"] = options.Callers,
        ["seconds"] = Math.Round(result.Seconds, 1),
        ["calls"] = result.Calls,
        ["errors"] = result.Errors.Total,
        ["connectionErrors"] = result.Errors.Connection,
        ["timeoutErrors"] = result.Errors.Timeout,
        ["otherErrors"] = result.Errors.Other,
        ["callsPerSecond"] = Math.Round(result.CallsPerSecond),
        ["p50Us"] = result.P50Us,
        ["p99Us"] = result.P99Us,
        ["connections"] = connections,
        ["reconnects"] = result.Reconnects,
        ["interrupted"] = interrupted,
        ["framesPerFlush"] = Math.Round(stats.FramesPerFlush, 2),
        ["framesPerSocketSend"] = Math.Round(stats.FramesPerSocketSend, 2),
    };
    Console.WriteLine(JsonSerializer.Serialize(summary, LoadJsonContext.Default.DictionaryStringObject));
    return interrupted || result.Errors.Total == 0 ? 0 : 1;
}
catch (MuxConnectionException ex)
{
    Console.Error.WriteLine($"Cannot load {target}: {ex.Message}");
    return 1;
}
finally
{
    if (server is not null)
    {
        await server.DisposeAsync();
    }
}

// A server started with --serve answers ILoadStats; any other server does not, and then the
// count is unknown (-1) rather than a guess. So is it when the server is down at the end: the
// summary does not wait for it.
static async Task<long> AskServerForConnectionsAsync(MuxClient client)
{
    try
    {
        return await client.CreateProxy<ILoadStats>().GetConnectionsAccepted().AsTask().WaitAsync(TimeSpan.FromSeconds(2));
    }
    catch (MuxRemoteException ex) when (ex.StatusCode == MuxStatusCode.UnknownMethod)
    {
        return -1;
    }
    catch (Exception ex) when (ex is MuxConnectionException or TimeoutException)
    {
        return -1;
    }
}

static MuxServer StartServer(EndPoint endPoint)
{
    var server = new MuxServer(new MuxServerOptions { EndPoint = endPoint });
    server.AddService<IUserService>(new UserService());
    server.AddService<ILoadStats>(new LoadStats(() => server.ConnectionsAccepted));
    return server;
}
