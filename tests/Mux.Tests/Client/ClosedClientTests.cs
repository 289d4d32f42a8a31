using Mux.Tests.Infrastructure;
using Mux.Tests.Pipeline;

namespace Mux.Tests.Client;

/// <summary>
/// A client that cannot reconnect (over a transport it was given, or with AutoReconnect off) and
/// has closed for good fails every later call as closed, not as "not sent, safe to retry": a
/// caller that retries on <see cref="MuxConnectionException.IsSafeToRetry"/> would otherwise retry
/// forever on a client that will never send anything again (a reconnecting client already failed
/// such calls as closed).
/// </summary>
public sealed class ClosedClientTests
{
    [Theory]
    [InlineData(TransportKind.InMemory)]
    [InlineData(TransportKind.Tcp)]
    public async Task ADisposedClientThatCannotReconnect_FailsLaterCallsAsClosed_NotSafeToRetry(TransportKind kind)
    {
        // Over TCP the client is given AutoReconnect off; in memory it cannot reconnect anyway.
        PipelineHost host = await PipelineHost.StartAsync(kind, clientOptions: new MuxClientOptions { AutoReconnect = false });
        await using (host)
        {
            IPipelineService failsFast = host.Client.CreateProxy<IPipelineService>(new MuxCallOptions { WaitForConnection = false });
            Assert.Equal(3, await host.Proxy.Add(1, 2).AsTask().WaitAsync(TestHost.Patience));
            await host.Client.DisposeAsync();

            MuxConnectionException waits = await Assert.ThrowsAsync<MuxConnectionException>(() => host.Proxy.Add(1, 2).AsTask().WaitAsync(TestHost.Patience));
            MuxConnectionException doesNotWait = await Assert.ThrowsAsync<MuxConnectionException>(() => failsFast.Add(1, 2).AsTask().WaitAsync(TestHost.Patience));
            MuxConnectionException stream = await Assert.ThrowsAsync<MuxConnectionException>(async () =>
            {
                await foreach (int item in host.Proxy.Count(1).WithCancellation(new CancellationTokenSource(TestHost.Patience).Token))
                {
                }
            });

            foreach (MuxConnectionException failed in new[] { waits, doesNotWait, stream })
            {
                Assert.False(failed.IsSafeToRetry, failed.Message);
                Assert.Equal(MuxCloseReason.LocalShutdown, failed.Reason);
                Assert.EndsWith(" is closed.", failed.Message, StringComparison.Ordinal);
            }
        }
    }
}
