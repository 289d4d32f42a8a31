using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Hosting;
using Mux;
using Mux.Samples.Contracts;

// A Mux server run the way .NET services are run: the generic host, appsettings.json
// ("Mux:Server:Listen" is the endpoint), console logging, and Ctrl+C to stop. On stop the server
// sends GoAway and lets the calls in flight finish (up to the host's shutdown timeout).
//
//   dotnet run -c Release --project samples/Mux.Samples.Server
//   dotnet run -c Release --project samples/Mux.Samples.Load -- --connect 127.0.0.1:5000
//
// The content root is the folder of the built program, where appsettings.json is copied, so the
// settings are found whatever the current directory is (`dotnet run --project` from the
// repository root, or the published executable started from anywhere).
var builder = Host.CreateApplicationBuilder(new HostApplicationBuilderSettings
{
    Args = args,
    ContentRootPath = AppContext.BaseDirectory,
});

// Each call gets its own scope and UserService instance (the default, Scoped).
builder.Services.AddMuxServer()
    .AddService<IUserService, UserService>()
    .AddService<ILoadStats, LoadStats>(ServiceLifetime.Singleton);

// The load sample asks how many connections the server accepted, to show they shared one.
builder.Services.AddSingleton(provider => new LoadStats(() => provider.GetRequiredService<MuxServer>().ConnectionsAccepted));

await builder.Build().RunAsync();
