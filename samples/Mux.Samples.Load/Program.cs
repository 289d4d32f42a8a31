using System.Net;
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

if (options.Help)
{
    Console.WriteLine(LoadOptions.Usage);
    return 0;
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
    long? connections = server is not null ? server.ConnectionsAccepted : await LoadSummary.AskServerForConnectionsAsync(client);
    bool interrupted = signals.Token.IsCancellationRequested;

    Console.WriteLine(LoadSummary.Line(result, connections, interrupted));
    Console.WriteLine($"client frames/flush: {stats.FramesPerFlush:F1}  frames/socket send: {stats.FramesPerSocketSend:F1}  frames/socket receive: {stats.FramesPerSocketReceive:F1}");
    if (result.Errors.First is not null)
    {
        Console.WriteLine($"first error: {result.Errors.First}");
    }

    Console.WriteLine(LoadSummary.Json(options.Method, options.Callers, result, connections, interrupted, stats));
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

static MuxServer StartServer(EndPoint endPoint)
{
    var server = new MuxServer(new MuxServerOptions { EndPoint = endPoint });
    server.AddService<IUserService>(new UserService());
    server.AddService<ILoadStats>(new LoadStats(() => server.ConnectionsAccepted));
    return server;
}
