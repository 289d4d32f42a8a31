using System.Net;
using MessagePack;
using Mux.Protocol;
using Mux.Server;
using Mux.Tests.Infrastructure;
using Mux.Tests.Protocol;

namespace Mux.Tests.Server;

/// <summary>
/// A call is answered once. A service activator (public API: users write their own) may fail after
/// the handler it ran has already sent the call's Response, for example when releasing the
/// instance throws; the caller has its answer by then, so the failure goes to the log and no Error
/// follows the Response on the wire.
/// </summary>
public sealed class FailureAfterAnswerTests
{
    [Fact]
    public async Task AnActivatorThatThrowsAfterTheResponseWasSent_SendsNoSecondAnswer_AndLogsTheFailure()
    {
        var log = new CapturedLog();
        await using var server = new MuxServer(new MuxServerOptions
        {
            EndPoint = new IPEndPoint(IPAddress.Loopback, 0),
            KeepAliveInterval = Timeout.InfiniteTimeSpan,
            LoggerFactory = log,
        });
        server.AddService<ITestService>(new ThrowAfterHandlerActivator(new TestService()));
        await server.StartAsync().WaitAsync(TestHost.Patience);
        await using RawMuxPeer peer = await RawMuxPeer.ConnectAsync(server.LocalEndPoint!);
        await peer.HandshakeAsync();
        ServerConnection connection = server.Connections.Single();

        await peer.SendAsync(RawMuxPeer.AddRequest(1, 2, 3));
        ReceivedFrame answer = await peer.ExpectFrameAsync();
        Assert.Equal((FrameType.Response, 1u), (answer.Type, answer.CallId));
        Assert.Equal(5, MessagePackSerializer.Deserialize<int>(answer.Payload));

        // Once the call has finished, whatever it sent is on the wire ahead of the next call's answer.
        await Hosts.WaitUntilAsync(() => connection.Incoming.Count == 0, "the first call to finish");
        await peer.SendAsync(RawMuxPeer.AddRequest(3, 4, 5));
        ReceivedFrame next = await peer.ExpectFrameAsync();
        Assert.Equal((FrameType.Response, 3u), (next.Type, next.CallId));

        Assert.Contains(log.Entries, entry => entry.EventId.Name == "HandlerFailed" && entry.Message.Contains("ITestService.Add", StringComparison.Ordinal));
    }

    /// <summary>Runs each call on one instance, then fails as it releases it.</summary>
    private sealed class ThrowAfterHandlerActivator(ITestService service) : MuxServiceActivator<ITestService>
    {
        public override async ValueTask InvokeAsync(MuxServerCall call, MuxMethodHandler<ITestService> handler)
        {
            await handler(service, call);
            throw new InvalidOperationException("The instance could not be released.");
        }
    }
}
