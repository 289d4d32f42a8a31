using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Http;
using Microsoft.Extensions.DependencyInjection;
using Mux.Samples.Contracts;

// A browser calls IUserService: ASP.NET Core serves a static page, and the page calls the Mux
// server over WebSocket (MapMux) with the TypeScript client's browser bundle.
//
//   npm --prefix clients/typescript ci && npm --prefix clients/typescript run build
//   dotnet run -c Release --project samples/Mux.Samples.Browser
//   then open http://127.0.0.1:5080
//
// The Mux server has no TCP endpoint here: MapMux alone serves it. Add
// `o => o.Listen(IPAddress.Loopback, 5000)` to AddMuxServer to serve .NET clients over TCP beside it.
var builder = WebApplication.CreateBuilder(new WebApplicationOptions
{
    Args = args,
    ContentRootPath = AppContext.BaseDirectory, // Where the page, the bundle and appsettings.json are copied.
});

builder.Services.AddMuxServer().AddService<IUserService, UserService>();

WebApplication app = builder.Build();
app.UseDefaultFiles();
app.UseStaticFiles();
app.MapMux("/mux");

// Until the TypeScript client is built, its path answers with how to build it.
if (!app.Environment.WebRootFileProvider.GetFileInfo("mux-rpc.js").Exists)
{
    app.MapGet("/mux-rpc.js", static () => Results.Text(
        "// The TypeScript client's browser bundle has not been built. From the repository's root run\n" +
        "//   npm --prefix clients/typescript ci && npm --prefix clients/typescript run build\n" +
        "// then start this sample again.\n" +
        "throw new Error(\"mux-rpc.js has not been built: run `npm --prefix clients/typescript run build`, then restart the sample.\");\n",
        "text/javascript"));
}

app.Run();
