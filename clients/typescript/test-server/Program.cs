using System.Globalization;
using System.Net;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Hosting;
using Microsoft.AspNetCore.Hosting.Server;
using Microsoft.AspNetCore.Hosting.Server.Features;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.FileProviders;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Logging;
using Mux;
using Mux.TypeScriptTests;

// The server the TypeScript client's tests start: the test services over TCP and over WebSocket
// (MapMux at /mux) side by side, and the browser test's page. Arguments:
//   --tcp-port N       the Mux TCP port (default 0: the system picks one; a restart passes the first's)
//   --http-port N      the HTTP port of /mux and the page (default 0)
//   --www DIR          serve the files of DIR (the browser test's page and the client's bundle)
//   --auth-token T     require this token in the client's Hello
//   --keepalive-ms N   the server's KeepAliveInterval
//   --keepalive-timeout-ms N  the server's KeepAliveTimeout
// It prints "tcp-port=N" and "http-port=N" once it listens, then "ready". A line "stop" on stdin
// stops it gracefully (GoAway, calls in flight finish); the end of stdin stops it too, so it never
// outlives its test.
int tcpPort = 0;
int httpPort = 0;
string? www = null;
string? authToken = null;
int keepAliveMs = 0;
int keepAliveTimeoutMs = 0;
for (int i = 0; i + 1 < args.Length; i += 2)
{
    switch (args[i])
    {
        case "--tcp-port": tcpPort = int.Parse(args[i + 1], CultureInfo.InvariantCulture); break;
        case "--http-port": httpPort = int.Parse(args[i + 1], CultureInfo.InvariantCulture); break;
        case "--www": www = Path.GetFullPath(args[i + 1]); break;
        case "--auth-token": authToken = args[i + 1]; break;
        case "--keepalive-ms": keepAliveMs = int.Parse(args[i + 1], CultureInfo.InvariantCulture); break;
        case "--keepalive-timeout-ms": keepAliveTimeoutMs = int.Parse(args[i + 1], CultureInfo.InvariantCulture); break;
        default: throw new ArgumentException($"Unknown argument {args[i]}.");
    }
}

WebApplicationBuilder builder = WebApplication.CreateBuilder(new WebApplicationOptions { ContentRootPath = AppContext.BaseDirectory });
builder.WebHost.ConfigureKestrel(kestrel => kestrel.Listen(IPAddress.Loopback, httpPort));
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
    }

    if (keepAliveTimeoutMs > 0)
    {
        options.KeepAliveTimeout = TimeSpan.FromMilliseconds(keepAliveTimeoutMs);
    }
}).AddService<ITestService, TestService>(ServiceLifetime.Singleton);
builder.Services.AddSingleton(provider => new TestService(() => provider.GetRequiredService<MuxServer>().ConnectionsAccepted));

WebApplication app = builder.Build();
if (www is not null)
{
    var files = new PhysicalFileProvider(www);
    app.UseDefaultFiles(new DefaultFilesOptions { FileProvider = files });
    app.UseStaticFiles(new StaticFileOptions { FileProvider = files });
}

app.MapMux("/mux");
await app.StartAsync();

var server = app.Services.GetRequiredService<MuxServer>();
string address = app.Services.GetRequiredService<IServer>().Features.Get<IServerAddressesFeature>()!.Addresses.First();
Console.WriteLine($"tcp-port={((IPEndPoint)server.LocalEndPoint!).Port}");
Console.WriteLine($"http-port={new Uri(address).Port}");
Console.WriteLine("ready");
Console.Out.Flush();

while (await Console.In.ReadLineAsync() is { } line && line.Trim() != "stop")
{
}

await app.StopAsync();
