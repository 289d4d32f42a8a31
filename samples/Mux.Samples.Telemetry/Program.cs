using System.Diagnostics;
using System.Net;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Logging;
using Mux;
using Mux.Samples.Contracts;
using Mux.Samples.Telemetry;
using OpenTelemetry.Metrics;
using OpenTelemetry.Resources;
using OpenTelemetry.Trace;

// One trace across a Mux client and a Mux server, exported by OpenTelemetry to the console.
// The server (on 127.0.0.1, port 0) and a client connected to it live in one host here so that one
// command shows both ends; in a real system each process registers the "Mux" source and meter the
// same way. The application's own span ("checkout") is the root: each call makes a client span
// under it, and the server's span joins the same trace through the W3C trace context that the
// request carries.
//
//   dotnet run -c Release --project samples/Mux.Samples.Telemetry
var builder = Host.CreateApplicationBuilder(args);
builder.Logging.SetMinimumLevel(LogLevel.Warning);

builder.Services.AddMuxServer(o => o.Listen(IPAddress.Loopback, 0)).AddService<IUserService, UserService>();
builder.Services.AddMuxClient().AddProxy<IUserService>();
// The server starts first (it was added first), so the client, which reads its options when it
// starts, can take the port the server was given. (MuxServer itself is resolved only then.)
builder.Services.AddOptions<MuxClientOptions>().Configure<IServiceProvider>((client, services) =>
    client.EndPoint = services.GetRequiredService<MuxServer>().LocalEndPoint);

var summary = new TraceSummary();
builder.Services.AddOpenTelemetry()
    .ConfigureResource(resource => resource.AddService("Mux.Samples.Telemetry"))
    .WithTracing(tracing => tracing
        .AddSource("Mux", Checkout.SourceName)
        .AddProcessor(summary)
        .AddConsoleExporter())
    .WithMetrics(metrics => metrics
        .AddMeter("Mux")
        .AddConsoleExporter());

using IHost host = builder.Build();
await host.StartAsync();

IUserService users = host.Services.GetRequiredService<IUserService>();
ActivityTraceId traceId;
using (Activity? checkout = Checkout.Source.StartActivity("checkout"))
{
    traceId = checkout!.TraceId;
    int sum = await users.Add(2, 3);
    List<User> list = await users.List(3);
    Console.WriteLine($"checkout: Add(2, 3) = {sum}, List(3) returned {list.Count} users");
}

await host.StopAsync(); // Flushes both exporters: the spans above and the final metrics.

// What the exported spans say, in one line each, and whether they form one trace.
bool ok = summary.Print(traceId, Console.Out);
return ok ? 0 : 1;
