using System.Diagnostics;
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

if (options.Serve is not null)
{
    await using MuxServer standalone = StartServer(options.Serve);
    await standalone.StartAsync();
    Console.WriteLine($"Serving IUserService on {standalone.LocalEndPoint}; Ctrl+C to stop.");
    var stop = new TaskCompletionSource();
    Console.CancelKeyPress += (_, e) => { e.Cancel = true; stop.TrySetResult(); };
    await stop.Task;
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
    Console.WriteLine($"Mux load: {options.Callers} callers, one connection to {target}, method {options.Method}, {options.Seconds} s.");

    LoadResult result = await LoadRunner.RunAsync(users, options, Console.Out);
    MuxConnectionStatistics stats = client.GetStatistics();
    long connections = server?.ConnectionsAccepted ?? await AskServerForConnectionsAsync(client);

    Console.WriteLine($"calls: {result.Calls:N0}  errors: {result.Errors}  calls/s: {result.CallsPerSecond:N0}  p50: {result.P50Us} us  p99: {result.P99Us} us  connections: {connections}");
    Console.WriteLine($"client frames/flush: {stats.FramesPerFlush:F1}  frames/socket send: {stats.FramesPerSocketSend:F1}  frames/socket receive: {stats.FramesPerSocketReceive:F1}");
    if (result.FirstError is not null)
    {
        Console.WriteLine($"first error: {result.FirstError}");
    }

    var summary = new Dictionary<string, object>
    {
        ["system"] = "mux",
        ["method"] = options.Method,
        ["callers"] = options.Callers,
        ["seconds"] = options.Seconds,
        ["calls"] = result.Calls,
        ["errors"] = result.Errors,
        ["callsPerSecond"] = Math.Round(result.CallsPerSecond),
        ["p50Us"] = result.P50Us,
        ["p99Us"] = result.P99Us,
        ["connections"] = connections,
        ["framesPerFlush"] = Math.Round(stats.FramesPerFlush, 2),
        ["framesPerSocketSend"] = Math.Round(stats.FramesPerSocketSend, 2),
    };
    Console.WriteLine(JsonSerializer.Serialize(summary, LoadJsonContext.Default.DictionaryStringObject));
    return result.Errors == 0 ? 0 : 1;
}
finally
{
    if (server is not null)
    {
        await server.DisposeAsync();
    }
}

// A server started with --serve answers ILoadStats; any other server does not, and then the
// count is unknown (-1) rather than a guess.
static async Task<long> AskServerForConnectionsAsync(MuxClient client)
{
    try
    {
        return await client.CreateProxy<ILoadStats>().GetConnectionsAccepted();
    }
    catch (MuxRemoteException ex) when (ex.StatusCode == MuxStatusCode.UnknownMethod)
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
