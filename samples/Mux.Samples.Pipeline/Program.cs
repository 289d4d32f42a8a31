using System.Net;
using System.Security.Claims;
using Mux;

// The call pipeline: the server's Authenticate maps the client's token to a user, a server
// interceptor refuses calls without a tenant, a client interceptor stamps a correlation id on
// every call, and the handler reads all of it. Runs to completion and exits 0.

var serverOptions = new MuxServerOptions
{
    EndPoint = new IPEndPoint(IPAddress.Loopback, 0),

    // Once per connection, before it serves a call: the token the client sent becomes the user its
    // calls run as (MuxCallContext.User). Returning null refuses the connection (Unauthenticated).
    Authenticate = (connection, cancellationToken) => new(connection.AuthToken switch
    {
        "token-alice" => new ClaimsPrincipal(new ClaimsIdentity([new Claim(ClaimTypes.Name, "alice")], authenticationType: "token")),
        _ => null,
    }),
};
serverOptions.Interceptors.Add(new RequireTenant());
await using var server = new MuxServer(serverOptions);
server.AddService<IOrderDesk>(new OrderDesk());
await server.StartAsync();

var clientOptions = new MuxClientOptions { AuthToken = "token-alice" };
clientOptions.Interceptors.Add(new CorrelationId());
await using var client = await MuxClient.ConnectAsync(server.LocalEndPoint!, clientOptions);

// Without a tenant, the server's interceptor refuses the call: the handler does not run.
IOrderDesk desk = client.CreateProxy<IOrderDesk>();
try
{
    await desk.PlaceOrder("tea");
    Console.WriteLine("unexpected: a call without a tenant ran");
    return 1;
}
catch (MuxRemoteException refused) when (refused.StatusCode == MuxStatusCode.PermissionDenied)
{
    Console.WriteLine($"without a tenant: {refused.StatusCode}: {refused.Message}");
}

// A proxy bound to per-call options: each of its calls carries tenant=acme and may take 5 s.
IOrderDesk acme = client.CreateProxy<IOrderDesk>(new MuxCallOptions
{
    Metadata = { ["tenant"] = "acme" },
    Timeout = TimeSpan.FromSeconds(5),
});
Console.WriteLine(await acme.PlaceOrder("tea"));

// A client whose token the server does not know is refused when it connects.
try
{
    await using var stranger = await MuxClient.ConnectAsync(server.LocalEndPoint!, new MuxClientOptions { AuthToken = "token-unknown" });
    Console.WriteLine("unexpected: an unknown token was accepted");
    return 1;
}
catch (MuxConnectionException refused)
{
    Console.WriteLine($"unknown token: {refused.Message}");
}

return 0;

[MuxService]
public interface IOrderDesk
{
    /// <summary>Places an order; says who placed it, for which tenant, under which correlation id.</summary>
    Task<string> PlaceOrder(string item, MuxCallContext? context = null);
}

/// <summary>The handler: reads the user Authenticate returned and the call's metadata.</summary>
public sealed class OrderDesk : IOrderDesk
{
    public Task<string> PlaceOrder(string item, MuxCallContext? context = null)
    {
        string user = context!.User.Identity?.Name ?? "anonymous";
        string tenant = context.Metadata["tenant"];                                 // RequireTenant let it through.
        string correlation = context.Metadata.GetValueOrDefault("correlation-id", "none");
        return Task.FromResult($"order for {item} placed by {user} for tenant {tenant} (correlation id {correlation})");
    }
}

/// <summary>Server side, around every call: refuses a call without a "tenant" before the handler
/// runs; the caller gets this status and message.</summary>
public sealed class RequireTenant : IMuxServerInterceptor
{
    public ValueTask InvokeAsync(MuxCallContext call, Func<ValueTask> next) =>
        call.Metadata.ContainsKey("tenant")
            ? next()
            : throw new MuxRemoteException(MuxStatusCode.PermissionDenied, $"{call.MethodName} needs a tenant (metadata 'tenant').");
}

/// <summary>Client side, around every call: adds a correlation id unless the caller set one.</summary>
public sealed class CorrelationId : IMuxClientInterceptor
{
    public ValueTask InvokeAsync(MuxClientCall call, Func<ValueTask> next)
    {
        call.Metadata.TryAdd("correlation-id", Guid.NewGuid().ToString("N")[..12]);
        return next();
    }
}
