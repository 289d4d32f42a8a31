#!/usr/bin/env bash
# Proves that a NuGet reference to Mux works the way a user consumes it: pack Mux and Mux.Hosting
# into a local folder feed, create a fresh project OUTSIDE the solution that references them by
# version, declare its own [MuxService] contract (so the generator must run from the package),
# host a server and a client with Mux.Hosting, make calls, and check the results.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
# A version no earlier run used, so the global package cache can never serve a stale build.
version="0.1.0-check.$(date +%s).$$"
cleanup() {
  rm -rf "$work" "${NUGET_PACKAGES:-$HOME/.nuget/packages}/mux/$version" "${NUGET_PACKAGES:-$HOME/.nuget/packages}/mux.hosting/$version"
}
trap cleanup EXIT

echo "package check: packing Mux $version"
for project in Mux Mux.Hosting; do
  dotnet pack "$root/src/$project/$project.csproj" -c Release -o "$work/feed" -p:Version="$version" --nologo -v quiet
done
ls "$work/feed"

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
  <ItemGroup>
    <PackageReference Include="Mux" Version="$version" />
    <PackageReference Include="Mux.Hosting" Version="$version" />
    <PackageReference Include="Microsoft.Extensions.Hosting" Version="10.0.14" />
  </ItemGroup>
</Project>
XML
cat > Program.cs <<'CS'
using System.Net;
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
Console.WriteLine($"RESULT {item.Name} {item.Quantity} {total}");

await client.StopAsync();
await server.StopAsync();

[MuxObject]
public sealed record Item(string Name, int Quantity);

[MuxService]
public interface IInventory
{
    Task<Item> Find(string name);

    ValueTask<int> Count(List<Item> items);
}

public sealed class Inventory : IInventory
{
    public Task<Item> Find(string name) => Task.FromResult(new Item(name, 7));

    public ValueTask<int> Count(List<Item> items) => new(items.Sum(i => i.Quantity));
}
CS

echo "package check: building and running a consumer of the packages"
dotnet run -c Release --nologo -v quiet > run.log 2>&1 || { cat run.log; echo "package check: the consumer failed" >&2; exit 1; }
cat run.log
if grep -qx "RESULT widget 7 42" run.log; then
  echo "package check: passed"
else
  echo "package check: expected the line 'RESULT widget 7 42'" >&2
  exit 1
fi
