using System.Diagnostics.CodeAnalysis;
using Microsoft.AspNetCore.Routing;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Logging.Abstractions;
using Microsoft.Extensions.Options;
using Mux;
using Mux.AspNetCore.Internal;

namespace Microsoft.AspNetCore.Builder;

/// <summary>Maps Mux over WebSocket on an ASP.NET Core application's endpoints.</summary>
public static class MuxEndpointRouteBuilderExtensions
{
    /// <summary>
    /// Serves Mux over WebSocket at <paramref name="pattern"/>: each WebSocket request becomes one
    /// Mux connection to the server that <c>AddMuxServer()</c> registered, with its services,
    /// interceptors, limits and telemetry, carrying the same frames as TCP in binary messages
    /// (subprotocol <c>mux</c>; see docs/protocol.md). Clients connect with
    /// <c>MuxClient.ConnectAsync(new Uri("ws://host:port/mux"))</c>, <c>wss://</c> behind Kestrel's
    /// TLS, or the TypeScript client in a browser.
    /// </summary>
    /// <remarks>
    /// <para>
    /// The returned builder is an ordinary endpoint's: <c>RequireAuthorization()</c>,
    /// <c>RequireCors()</c>, <c>RequireHost()</c>, rate limiting and the rest apply to the WebSocket
    /// request (an unauthenticated one is refused with 401 before any upgrade). The user ASP.NET Core
    /// authenticated for the request is <see cref="MuxCallContext.User"/> for every call on that
    /// connection, and <see cref="MuxServerOptions.Authenticate"/> is not run for it; a request
    /// without an authenticated user goes through <see cref="MuxServerOptions.AuthToken"/> and
    /// <see cref="MuxServerOptions.Authenticate"/> as a TCP connection does (the token check applies
    /// to every connection). <see cref="MuxConnectionInfo.RemoteEndPoint"/> is the request's remote
    /// address, and <see cref="MuxConnectionInfo.ClientCertificate"/> the certificate Kestrel's TLS
    /// received, if any.
    /// </para>
    /// <para>
    /// The WebSocket middleware runs inside the endpoint, so <c>app.UseWebSockets()</c> is optional;
    /// call it (or configure <c>WebSocketOptions</c>) to set <c>AllowedOrigins</c>, which a browser
    /// application that authenticates with cookies should restrict. A request that is not a
    /// WebSocket upgrade is answered 400 with a message that says so; one that offers only other
    /// subprotocols, 400 too; one that comes while the Mux server is not running, 503.
    /// </para>
    /// <para>
    /// With MapMux the server needs no <see cref="MuxServerOptions.EndPoint"/>: without one it
    /// listens on nothing of its own and serves only its mapped endpoints; with one it serves TCP
    /// and WebSocket side by side. When the application stops, the Mux server sends GoAway on every
    /// connection and drains the calls in flight before the host stops its web server, so a
    /// WebSocket client, like a TCP one, loses no call it was promised.
    /// </para>
    /// </remarks>
    /// <example><code>
    /// builder.Services.AddMuxServer().AddService&lt;IUserService, UserService&gt;();
    /// WebApplication app = builder.Build();
    /// app.MapMux("/mux").RequireAuthorization();
    /// </code></example>
    /// <param name="endpoints">The application's endpoints.</param>
    /// <param name="pattern">The route pattern, for example <c>"/mux"</c>.</param>
    /// <returns>The endpoint's convention builder.</returns>
    /// <exception cref="InvalidOperationException">No Mux server is registered: call
    /// <c>builder.Services.AddMuxServer()</c> first.</exception>
    public static IEndpointConventionBuilder MapMux(this IEndpointRouteBuilder endpoints, [StringSyntax("Route")] string pattern)
    {
        ArgumentNullException.ThrowIfNull(endpoints);
        ArgumentNullException.ThrowIfNull(pattern);
        IServiceProvider services = endpoints.ServiceProvider;
        if (services.GetService<IServiceProviderIsService>() is not { } registered || !registered.IsService(typeof(MuxServer)))
        {
            throw new InvalidOperationException(
                "MapMux serves the Mux server of AddMuxServer, and none is registered. Call builder.Services.AddMuxServer() " +
                "(from Mux.Hosting) and add the services it serves, for example .AddService<IMyService, MyService>(), " +
                "before building the application.");
        }

        ILogger logger = (services.GetService<ILoggerFactory>() ?? NullLoggerFactory.Instance).CreateLogger(MuxWebSocketEndpoint.LogCategory);

        var endpoint = new MuxWebSocketEndpoint(services, logger);

        // The options are made once: the server the host starts later is made from this object.
        MuxServerOptions options = services.GetRequiredService<IOptions<MuxServerOptions>>().Value;
        if (!options.ServesHostEndpoints)
        {
            options.ServesHostEndpoints = true;

            // Once per application: the drain must begin before the web server waits for its requests, and a
            // WebSocket's lasts as long as its connection.
            services.GetService<IHostApplicationLifetime>()?.ApplicationStopping.Register(
                static state => ((MuxWebSocketEndpoint)state!).BeginStop(), endpoint);
        }

        IApplicationBuilder pipeline = endpoints.CreateApplicationBuilder();
        pipeline.UseWebSockets();
        pipeline.Run(endpoint.HandleAsync);
        return endpoints.Map(pattern, pipeline.Build()).WithDisplayName($"Mux {pattern}");
    }
}
