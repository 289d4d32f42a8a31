using System.Security.Claims;
using System.Text.Encodings.Web;
using Microsoft.AspNetCore.Authentication;
using Microsoft.AspNetCore.Builder;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Options;

namespace Mux.AspNetCore.Tests;

/// <summary>ASP.NET Core's authentication and authorization on a MapMux endpoint: a user it
/// authenticated is the handlers' MuxCallContext.User; RequireAuthorization refuses an
/// unauthenticated upgrade; a request without a user goes through Mux's own Authenticate.</summary>
public class AuthorizationTests
{
    [Fact]
    public async Task AnUnauthenticatedUpgrade_IsRefusedWith401_BeforeAnyMuxConnection()
    {
        await using WebTestHost host = await StartAsync(requireAuthorization: true);

        MuxConnectionException refused = await Assert.ThrowsAsync<MuxConnectionException>(() => MuxClient.ConnectAsync(host.Uri, new MuxClientOptions { AutoReconnect = false }));

        Assert.Contains("answered the WebSocket upgrade with HTTP 401 (Unauthorized)", refused.Message);
        Assert.Equal(0, host.Server.ConnectionsAccepted);
    }

    [Fact]
    public async Task TheUserAspNetCoreAuthenticated_IsTheHandlersUser_AndAuthenticateIsNotRun()
    {
        int authenticateRuns = 0;
        await using WebTestHost host = await StartAsync(requireAuthorization: true, authenticate: (_, _) =>
        {
            Interlocked.Increment(ref authenticateRuns);
            return ValueTask.FromResult<ClaimsPrincipal?>(null); // Would refuse every connection it saw.
        });

        await using MuxClient client = await MuxClient.ConnectAsync(new Uri(host.Uri + "?user=alice"));

        Assert.Equal("alice", await client.CreateProxy<IWebTestService>().WhoAmI());
        Assert.Equal(0, Volatile.Read(ref authenticateRuns));
    }

    [Fact]
    public async Task ARequestWithoutAUser_GoesThroughAuthenticate_AsOverTcp()
    {
        await using WebTestHost host = await StartAsync(requireAuthorization: false, authenticate: static (connection, _) =>
            ValueTask.FromResult(connection.AuthToken == "secret" ? new ClaimsPrincipal(new ClaimsIdentity([new Claim(ClaimTypes.Name, "token-user")], "token")) : null));

        await using MuxClient client = await MuxClient.ConnectAsync(host.Uri, new MuxClientOptions { AuthToken = "secret" });
        MuxConnectionException refused = await Assert.ThrowsAsync<MuxConnectionException>(() => MuxClient.ConnectAsync(host.Uri, new MuxClientOptions { AuthToken = "wrong", AutoReconnect = false }));

        Assert.Equal("token-user", await client.CreateProxy<IWebTestService>().WhoAmI());
        Assert.Contains("refused the connection (Unauthenticated)", refused.Message);
    }

    [Fact]
    public async Task AnAnonymousEndpoint_WithoutAuthenticate_ServesAnAnonymousUser()
    {
        await using WebTestHost host = await StartAsync(requireAuthorization: false);
        await using MuxClient client = await MuxClient.ConnectAsync(host.Uri);

        Assert.Equal("(anonymous)", await client.CreateProxy<IWebTestService>().WhoAmI());
    }

    private static Task<WebTestHost> StartAsync(bool requireAuthorization, Func<MuxConnectionInfo, CancellationToken, ValueTask<ClaimsPrincipal?>>? authenticate = null) =>
        WebTestHost.StartAsync(new WebTestHostOptions
        {
            ConfigureMux = o => o.Authenticate = authenticate,
            ConfigureServices = static (builder, _) =>
            {
                builder.Services.AddAuthentication(QueryUserHandler.SchemeName)
                    .AddScheme<AuthenticationSchemeOptions, QueryUserHandler>(QueryUserHandler.SchemeName, null);
                builder.Services.AddAuthorization();
            },
            ConfigureEndpoint = requireAuthorization ? static endpoint => endpoint.RequireAuthorization() : null,
        });

    /// <summary>Authenticates a request whose query names its user (<c>?user=alice</c>), as a
    /// browser's WebSocket would carry a token; challenges with 401 otherwise.</summary>
    private sealed class QueryUserHandler(IOptionsMonitor<AuthenticationSchemeOptions> options, ILoggerFactory logger, UrlEncoder encoder)
        : AuthenticationHandler<AuthenticationSchemeOptions>(options, logger, encoder)
    {
        public const string SchemeName = "QueryUser";

        protected override Task<AuthenticateResult> HandleAuthenticateAsync()
        {
            if (Request.Query["user"].ToString() is not { Length: > 0 } name)
            {
                return Task.FromResult(AuthenticateResult.NoResult());
            }

            var identity = new ClaimsIdentity([new Claim(ClaimTypes.Name, name)], SchemeName);
            return Task.FromResult(AuthenticateResult.Success(new AuthenticationTicket(new ClaimsPrincipal(identity), SchemeName)));
        }
    }
}
