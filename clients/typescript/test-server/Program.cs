using System.Net;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Logging;
using Mux;
using Mux.TypeScriptTests;

// The server the TypeScript client's tests start. Arguments:
//   --tcp-port N       the TCP port (default 0: the system picks one; a restart passes the first's)
//   --auth-token T     require this token in the client's Hello
//   --keepalive-ms N   the server's KeepAliveInterval (and a KeepAliveTimeout of the same length)
// It prints "tcp-port=N" once it listens, then "ready". A line "stop" on stdin stops it gracefully
// (GoAway, calls in flight finish); the end of stdin stops it too, so it never outlives its test.
int tcpPort = 0;
string? authToken = null;
int keepAliveMs = 0;
for (int i = 0; i + 1 < args.Length; i += 2)
{
    switch (args[i])
    {
        case "--tcp-port": tcpPort = int.Parse(args[i + 1], System.Globalization.CultureInfo.InvariantCulture); break;
        case "--auth-token": authToken = args[i + 1]; break;
        case "--keepalive-ms": keepAliveMs = int.Parse(args[i + 1], System.Globalization.CultureInfo.InvariantCulture); break;
        default: throw new ArgumentException($"Unknown argument {args[i]}.");
    }
}

HostApplicationBuilder builder = Host.CreateApplicationBuilder();
builder.Logging.ClearProviders();
builder.Logging.AddSimpleConsole().SetMinimumLevel(LogLevel.Warning);
builder.Logging.AddFilter("Microsoft.Hosting.Lifetime", LogLevel.None);
// Logs go to stderr; stdout carries only the lines the tests read.
builder.Services.Configure<Microsoft.Extensions.Logging.Console.ConsoleLoggerOptions>(o => o.LogToStandardErrorThreshold = LogLevel.Trace);
builder.Services.Configure<HostOptions>(o => o.ShutdownTimeout = TimeSpan.FromSeconds(10));
builder.Services.AddMuxServer(options =>
{
    options.EndPoint = new IPEndPoint(IPAddress.Loopback, tcpPort);
    options.AuthToken = authToken;
    if (keepAliveMs > 0)
    {
        options.KeepAliveInterval = TimeSpan.FromMilliseconds(keepAliveMs);
        options.KeepAliveTimeout = TimeSpan.FromMilliseconds(keepAliveMs);
    }
}).AddService<ITestService, TestService>(ServiceLifetime.Singleton);
builder.Services.AddSingleton(provider => new TestService(() => provider.GetRequiredService<MuxServer>().ConnectionsAccepted));

using IHost host = builder.Build();
await host.StartAsync();
var server = host.Services.GetRequiredService<MuxServer>();
Console.WriteLine($"tcp-port={((IPEndPoint)server.LocalEndPoint!).Port}");
Console.WriteLine("ready");
Console.Out.Flush();

while (await Console.In.ReadLineAsync() is { } line && line.Trim() != "stop")
{
}

await host.StopAsync();
