using System.Net;
using Mux;

// The smallest complete Mux program: a contract, a server, a client, one call.

// Server: serve IGreeter on a free port of 127.0.0.1.
await using var server = new MuxServer(new MuxServerOptions { EndPoint = new IPEndPoint(IPAddress.Loopback, 0) });
server.AddService<IGreeter>(new Greeter());
await server.StartAsync();

// Client: one connection; Mux generated the proxy from [MuxService] at compile time.
await using var client = await MuxClient.ConnectAsync(server.LocalEndPoint!);
IGreeter greeter = client.CreateProxy<IGreeter>();
Console.WriteLine(await greeter.SayHello("world"));

[MuxService]
public interface IGreeter
{
    Task<string> SayHello(string name);
}

public sealed class Greeter : IGreeter
{
    public Task<string> SayHello(string name) => Task.FromResult($"Hello, {name}!");
}
