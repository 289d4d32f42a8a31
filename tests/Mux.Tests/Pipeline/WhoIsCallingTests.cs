using System.Net;
using System.Security.Claims;
using Mux.Tests.Infrastructure;

namespace Mux.Tests.Pipeline;

/// <summary>
/// Who is calling (issue 25): MuxServerOptions.Authenticate maps what the client sent in its
/// handshake to the user its calls run as, or refuses the connection, whose client then sees the
/// status; without Authenticate every call runs as an anonymous user.
/// </summary>
public sealed class WhoIsCallingTests
{
    [Theory]
    [InlineData(TransportKind.InMemory)]
    [InlineData(TransportKind.Tcp)]
    public async Task Authenticate_MapsTheClientsTokenToAUser_WhomTheHandlerSees(TransportKind kind)
    {
        var seen = new List<MuxConnectionInfo>();
        await using PipelineHost host = await PipelineHost.StartAsync(kind, TokenServer(seen), new MuxClientOptions { AuthToken = "alice-token" });

        Assert.Equal("alice", await host.Proxy.WhoAmI().WaitAsync(TestHost.Patience));
        Assert.Equal("alice", await host.Proxy.WhoAmI().WaitAsync(TestHost.Patience));

        // Once per connection, with the token the client sent and, over TCP, its address.
        MuxConnectionInfo connection = Assert.Single(seen);
        Assert.Equal("alice-token", connection.AuthToken);
        Assert.Null(connection.ClientCertificate);
        Assert.Equal(kind == TransportKind.Tcp, connection.RemoteEndPoint is IPEndPoint);

        // Another client with another token runs as another user on the same server.
        await using MuxClient bob = await host.ConnectAnotherClientAsync(new MuxClientOptions { AuthToken = "bob-token" });
        Assert.Equal("bob", await bob.CreateProxy<IPipelineService>().WhoAmI().WaitAsync(TestHost.Patience));
        Assert.Equal(2, seen.Count);
    }

    [Theory]
    [InlineData(TransportKind.InMemory)]
    [InlineData(TransportKind.Tcp)]
    public async Task WithoutAuthenticate_CallsRunAsAnAnonymousUser(TransportKind kind)
    {
        await using PipelineHost host = await PipelineHost.StartAsync(kind, clientOptions: new MuxClientOptions { AuthToken = "alice-token" });

        Assert.Equal("anonymous", await host.Proxy.WhoAmI().WaitAsync(TestHost.Patience));
    }

    public static TheoryData<TransportKind, string, string> Refusals => new()
    {
        { TransportKind.InMemory, "unknown-token", "refused the connection (Unauthenticated): The server did not accept the client's credentials (MuxServerOptions.Authenticate returned no user)." },
        { TransportKind.Tcp, "unknown-token", "refused the connection (Unauthenticated): The server did not accept the client's credentials (MuxServerOptions.Authenticate returned no user)." },
        { TransportKind.InMemory, "mallory-token", "refused the connection (PermissionDenied): Mallory is banned." },
        { TransportKind.Tcp, "mallory-token", "refused the connection (PermissionDenied): Mallory is banned." },
        { TransportKind.InMemory, "broken-token", "refused the connection (Unauthenticated): The server could not authenticate the client (MuxServerOptions.Authenticate failed; the server's log has why)." },
        { TransportKind.Tcp, "broken-token", "refused the connection (Unauthenticated): The server could not authenticate the client (MuxServerOptions.Authenticate failed; the server's log has why)." },
    };

    [Theory]
    [MemberData(nameof(Refusals))]
    public async Task Authenticate_ReturningNullOrThrowing_RefusesTheConnection_TheClientSeesTheStatus_AndTheServerServesOthers(TransportKind kind, string token, string expected)
    {
        await using PipelineHost host = await PipelineHost.StartAsync(kind, TokenServer([]), new MuxClientOptions { AuthToken = "alice-token" });

        MuxConnectionException refused = await Assert.ThrowsAsync<MuxConnectionException>(() => host.ConnectAnotherClientAsync(new MuxClientOptions { AuthToken = token }));

        Assert.EndsWith(expected, refused.Message, StringComparison.Ordinal);
        Assert.Equal(token == "mallory-token" ? MuxStatusCode.PermissionDenied : MuxStatusCode.Unauthenticated, Assert.IsType<MuxRemoteException>(refused.InnerException).StatusCode);

        // The refused client ran nothing; the accepted one goes on.
        Assert.Equal(0, host.Service.Runs);
        Assert.Equal("alice", await host.Proxy.WhoAmI().WaitAsync(TestHost.Patience));
    }

    /// <summary>A server that knows alice and bob by their tokens, refuses mallory with
    /// PermissionDenied, fails on "broken-token", and knows no one else (null).</summary>
    private static MuxServerOptions TokenServer(List<MuxConnectionInfo> seen) => new()
    {
        Authenticate = (connection, _) =>
        {
            lock (seen)
            {
                seen.Add(connection);
            }

            return connection.AuthToken switch
            {
                "alice-token" => new(User("alice")),
                "bob-token" => new(User("bob")),
                "mallory-token" => throw new MuxRemoteException(MuxStatusCode.PermissionDenied, "Mallory is banned."),
                "broken-token" => throw new InvalidOperationException("The user store is down."),
                _ => new((ClaimsPrincipal?)null),
            };
        },
    };

    private static ClaimsPrincipal User(string name) => new(new ClaimsIdentity([new Claim(ClaimTypes.Name, name)], authenticationType: "token"));
}
