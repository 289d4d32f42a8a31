#!/usr/bin/env bash
# Proves that a NuGet reference to Mux works the way a user consumes it: pack Mux, Mux.Hosting and
# Mux.AspNetCore into a local folder feed, create a fresh project OUTSIDE the solution that
# references them by version, declare its own [MuxService] contract (so the generator must run from
# the package), host a server and a client with Mux.Hosting, make calls with its own
# [MessagePackObject] types (Guid, DateTimeOffset, a nested list), serve the same contract through
# MapMux on Kestrel and call it over WebSocket, and check the results. Warnings are errors.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
# A version no earlier run used, so the global package cache can never serve a stale build.
version="0.1.0-check.$(date +%s).$$"
cleanup() {
  rm -rf "$work" "${NUGET_PACKAGES:-$HOME/.nuget/packages}/mux/$version" "${NUGET_PACKAGES:-$HOME/.nuget/packages}/mux.hosting/$version" "${NUGET_PACKAGES:-$HOME/.nuget/packages}/mux.aspnetcore/$version"
}
trap cleanup EXIT

echo "package check: packing Mux $version"
for project in Mux Mux.Hosting Mux.AspNetCore; do
  dotnet pack "$root/src/$project/$project.csproj" -c Release -o "$work/feed" -p:Version="$version" --nologo -v quiet
done
ls "$work/feed"

# What a package page shows: the project and repository URLs, and a README whose links all work
# there (absolute: a relative link has no repository to resolve against on a package page).
for project in Mux Mux.Hosting Mux.AspNetCore; do
  python3 - "$work/feed/$project.$version.nupkg" "$project" <<'PY' || exit 1
import re, sys, zipfile
path, project = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(path) as package:
    nuspec = package.read(project + ".nuspec").decode("utf-8-sig")
    readme = package.read("README.md").decode("utf-8")
problems = []
if not re.search(r"<projectUrl>https://[^<]+</projectUrl>", nuspec):
    problems.append("no projectUrl")
if not re.search(r'<repository type="git" url="https://[^"]+"', nuspec):
    problems.append("no repository url")
relative = [m for m in re.findall(r"\]\(([^)\s]+)\)", readme) if not re.match(r"(https?:|mailto:|#)", m)]
if relative:
    problems.append("relative links in the packed README: " + ", ".join(relative))
if problems:
    sys.exit(f"package check: {project}: " + "; ".join(problems))
print(f"package check: {project}: projectUrl, repository url, README links absolute")
PY
done

mkdir -p "$work/consumer"
cd "$work/consumer"
cat > nuget.config <<XML
<?xml version="1.0" encoding="utf-8"?>
<configuration>
  <packageSources>
    <clear />
    <add key="local" value="$work/feed" />
    <add key="nuget.org" value="https://api.nuget.org/v3/index.json" />
  </packageSources>
  <packageSourceMapping>
    <packageSource key="local">
      <package pattern="Mux" />
      <package pattern="Mux.*" />
    </packageSource>
    <packageSource key="nuget.org">
      <package pattern="*" />
    </packageSource>
  </packageSourceMapping>
</configuration>
XML
cat > Consumer.csproj <<XML
<Project Sdk="Microsoft.NET.Sdk">
  <PropertyGroup>
    <OutputType>Exe</OutputType>
    <TargetFramework>net10.0</TargetFramework>
    <Nullable>enable</Nullable>
    <ImplicitUsings>enable</ImplicitUsings>
    <TreatWarningsAsErrors>true</TreatWarningsAsErrors>
  </PropertyGroup>
  <!-- For MapMux; it also brings Microsoft.Extensions.Hosting, which NuGet refuses as a package beside it (NU1510). -->
  <ItemGroup>
    <FrameworkReference Include="Microsoft.AspNetCore.App" />
  </ItemGroup>
  <ItemGroup>
    <PackageReference Include="Mux" Version="$version" />
    <PackageReference Include="Mux.Hosting" Version="$version" />
    <PackageReference Include="Mux.AspNetCore" Version="$version" />
    <PackageReference Include="MessagePack" Version="2.5.307" />
  </ItemGroup>
</Project>
XML
cat > Program.cs <<'CS'
using System.Net;
using MessagePack;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Hosting;
using Microsoft.AspNetCore.Hosting.Server;
using Microsoft.AspNetCore.Hosting.Server.Features;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Hosting;
using Mux;

var serverBuilder = Host.CreateApplicationBuilder();
serverBuilder.Services.AddMuxServer(o => o.Listen(IPAddress.Loopback, 0)).AddService<IInventory, Inventory>();
using IHost server = serverBuilder.Build();
await server.StartAsync();
EndPoint endPoint = server.Services.GetRequiredService<MuxServer>().LocalEndPoint!;

var clientBuilder = Host.CreateApplicationBuilder();
clientBuilder.Services.AddMuxClient(o => o.EndPoint = endPoint).AddProxy<IInventory>();
using IHost client = clientBuilder.Build();
await client.StartAsync();

IInventory inventory = client.Services.GetRequiredService<IInventory>();
Item item = await inventory.Find("widget");
int total = await inventory.Count([new Item("a", 2), new Item("b", 40)]);
var order = new Order
{
    Id = Guid.Parse("6f9619ff-8b86-d011-b42d-00c04fc964ff"),
    Placed = new DateTimeOffset(2024, 5, 6, 7, 8, 9, TimeSpan.FromHours(2)),
    Items = [new Item("a", 1), new Item("b", 2)],
};
Order echoed = await inventory.Echo(order);
Console.WriteLine($"RESULT {item.Name} {item.Quantity} {total}");
Console.WriteLine($"ORDER {echoed.Id} {echoed.Placed:yyyy-MM-ddTHH:mm:sszzz} {string.Join(",", echoed.Items.Select(i => i.Name + i.Quantity))}");

await client.StopAsync();
await server.StopAsync();

// The same contract through MapMux on Kestrel (port 0), called over WebSocket.
WebApplicationBuilder webBuilder = WebApplication.CreateSlimBuilder();
webBuilder.WebHost.UseUrls("http://127.0.0.1:0");
webBuilder.Services.AddMuxServer().AddService<IInventory, Inventory>();
await using WebApplication web = webBuilder.Build();
web.MapMux("/mux");
await web.StartAsync();
string address = web.Services.GetRequiredService<IServer>().Features.Get<IServerAddressesFeature>()!.Addresses.First();
await using (MuxClient overWebSocket = await MuxClient.ConnectAsync(new Uri(address.Replace("http://", "ws://") + "/mux")))
{
    Item found = await overWebSocket.CreateProxy<IInventory>().Find("gadget");
    Console.WriteLine($"WEBSOCKET {found.Name} {found.Quantity}");
}

await web.StopAsync();

[MessagePackObject]
public sealed record Item([property: Key(0)] string Name, [property: Key(1)] int Quantity);

[MessagePackObject]
public sealed class Order
{
    [Key(0)] public Guid Id { get; set; }
    [Key(1)] public DateTimeOffset Placed { get; set; }
    [Key(2)] public List<Item> Items { get; set; } = [];
}

[MuxService]
public interface IInventory
{
    Task<Item> Find(string name);

    ValueTask<int> Count(List<Item> items);

    Task<Order> Echo(Order order);
}

public sealed class Inventory : IInventory
{
    public Task<Item> Find(string name) => Task.FromResult(new Item(name, 7));

    public ValueTask<int> Count(List<Item> items) => new(items.Sum(i => i.Quantity));

    public Task<Order> Echo(Order order) => Task.FromResult(order);
}
CS

echo "package check: building and running a consumer of the packages"
dotnet run -c Release --nologo -v quiet > run.log 2>&1 || { cat run.log; echo "package check: the consumer failed" >&2; exit 1; }
cat run.log
if grep -qx "RESULT widget 7 42" run.log && grep -qx "ORDER 6f9619ff-8b86-d011-b42d-00c04fc964ff 2024-05-06T07:08:09+02:00 a1,b2" run.log && grep -qx "WEBSOCKET gadget 7" run.log; then
  echo "package check: passed"
else
  echo "package check: expected the lines 'RESULT widget 7 42', 'ORDER 6f9619ff-8b86-d011-b42d-00c04fc964ff 2024-05-06T07:08:09+02:00 a1,b2' and 'WEBSOCKET gadget 7'" >&2
  exit 1
fi
