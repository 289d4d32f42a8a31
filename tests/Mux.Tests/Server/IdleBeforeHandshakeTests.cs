using System.Security.Claims;
using Microsoft.Extensions.Time.Testing;
using Mux.Protocol;
using Mux.Server;
using Mux.Tests.Connection;
using Mux.Tests.Infrastructure;
using Mux.Tests.Protocol;
using static Mux.Tests.Protocol.ProtocolTestHelpers;

namespace Mux.Tests.Server;

/// <summary>MuxServerOptions.IdleTimeout is for connections that could serve calls: the handshake
/// (HandshakeTimeout's) does not count as idle, and the idle period starts when it completes. Time
/// moves by hand (FakeTimeProvider); keepalive is off so that only the two timeouts are at work.</summary>
public class IdleBeforeHandshakeTests
{
    private static readonly TimeSpan Idle = TimeSpan.FromMinutes(2);

    [Fact]
    public async Task AnAuthenticateSlowerThanTheIdleTimeout_CompletesItsHandshake_AndTheIdlePeriodStartsThen()
    {
        var time = new FakeTimeProvider();
        var authenticating = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        var verdict = new TaskCompletionSource<ClaimsPrincipal?>(TaskCreationOptions.RunContinuationsAsynchronously);
        (MuxServer server, TestService _) = await KeepAliveTests.StartServerAsync(new MuxServerOptions
        {
            TimeProvider = time,
            IdleTimeout = Idle,
            HandshakeTimeout = Idle * 10,
            KeepAliveInterval = Timeout.InfiniteTimeSpan,
            Authenticate = (_, _) =>
            {
                authenticating.TrySetResult();
                return new ValueTask<ClaimsPrincipal?>(verdict.Task);
            },
        });
        await using MuxServer __ = server;
        await using RawMuxPeer client = await RawMuxPeer.ConnectAsync(server.LocalEndPoint!);
        await client.SendAsync(WriteHelloFrame(FrameType.Hello, new HandshakeSettings(ProtocolConstants.Version, 4 * 1024 * 1024, int.MaxValue, null)));
        await authenticating.Task.WaitAsync(TestHost.Patience);
        ServerConnection connection = server.Connections.Single();

        time.Advance(Idle + TimeSpan.FromSeconds(1));
        Assert.False(connection.IsClosed, $"The connection was closed ({connection.CloseReason}) while Authenticate ran, within its HandshakeTimeout.");

        verdict.SetResult(new ClaimsPrincipal(new ClaimsIdentity([new Claim(ClaimTypes.Name, "slow")], "token")));
        Assert.Equal(FrameType.HelloAck, (await client.ExpectFrameAsync()).Type);
        await client.SendAsync(RawMuxPeer.AddRequest(1, 2, 3));
        Assert.Equal(FrameType.Response, (await client.ExpectFrameAsync()).Type);
        await Hosts.WaitUntilAsync(() => connection.Incoming.Count == 0, "the server to count the call out");

        time.Advance(Idle - TimeSpan.FromSeconds(1));
        Assert.False(connection.Incoming.IsGoingAway);
        time.Advance(TimeSpan.FromSeconds(1));
        Assert.Equal(FrameType.GoAway, (await client.ExpectFrameAsync()).Type);
        client.ShutdownSend();
        await connection.Completion.WaitAsync(TestHost.Patience);
        Assert.Equal(MuxCloseReason.IdleTimeout, connection.CloseReason);
    }
}
