using System.Net.Sockets;
using Microsoft.Extensions.Time.Testing;
using Mux.Protocol;
using Mux.Tests.Infrastructure;
using Mux.Tests.Protocol;
using static Mux.Tests.Infrastructure.RawServerFrames;

namespace Mux.Tests.Client;

/// <summary>
/// A client that does not reconnect gives a call waiting for its first connection that connection,
/// even when the server sent GoAway before the call looked at it: the call fails on it at once, as
/// every later call does, instead of waiting for a connection that will never come, and not as safe
/// to retry (this client sends nothing again: GoAwayWithoutReconnectTests). The server is
/// hand-written and sends its HelloAck and GoAway in one write; the clock is fake and never moves,
/// so a call that waited on would wait until the test gives up.
/// </summary>
public sealed class FirstConnectionGoAwayTests
{
    [Fact]
    public async Task WithAutoReconnectOff_ACallWaitingForTheFirstConnection_WhichGetsGoAwayAtOnce_FailsOnItAtOnce_NotSent()
    {
        using TcpListener listener = RawMuxPeer.Listen();
        await using MuxClient client = MuxClient.Create(new MuxClientOptions
        {
            EndPoint = listener.LocalEndpoint,
            AutoReconnect = false,
            TimeProvider = new FakeTimeProvider(),
            KeepAliveInterval = Timeout.InfiniteTimeSpan,
        });
        Task<int> call = client.CreateProxy<ITestService>().Add(1, 2).AsTask();
        await using RawMuxPeer server = await RawMuxPeer.AcceptAsync(listener);
        Assert.Equal(FrameType.Hello, (await server.ExpectFrameAsync()).Type);

        await server.SendAsync([.. HelloAck(), .. GoAway(0)]);

        var failed = await Assert.ThrowsAsync<MuxConnectionException>(() => call.WaitAsync(TestHost.Patience));
        Assert.Equal(MuxCloseReason.GoAway, failed.Reason);
        Assert.False(failed.IsSafeToRetry, failed.Message);
        Assert.Contains("does not reconnect", failed.Message, StringComparison.Ordinal);
        Assert.Contains("the call was not sent", failed.Message, StringComparison.OrdinalIgnoreCase);
    }
}
