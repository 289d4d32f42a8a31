using Mux.Tests.Infrastructure;
using Mux.Tests.Pipeline;

namespace Mux.Tests.Client;

/// <summary>
/// A client that cannot reconnect (over a transport it was given, or with AutoReconnect off) whose
/// server sent GoAway will never have another connection: while its old one finishes the calls the
/// server still serves, new calls fail at once as not safe to retry, saying so. "Not sent, safe to
/// retry" there had a caller that retries on <see cref="MuxConnectionException.IsSafeToRetry"/>
/// spin until the longest call still running ended.
/// </summary>
public sealed class GoAwayWithoutReconnectTests
{
    [Theory]
    [InlineData(TransportKind.InMemory)]
    [InlineData(TransportKind.Tcp)]
    public async Task NewCallsWhileTheOldConnectionDrains_FailAsNotSafeToRetry_AndTheRunningCallEnds(TransportKind kind)
    {
        PipelineHost host = await PipelineHost.StartAsync(kind, clientOptions: new MuxClientOptions { AutoReconnect = false });
        await using (host)
        {
            IPipelineService failsFast = host.Client.CreateProxy<IPipelineService>(new MuxCallOptions { WaitForConnection = false });
            Task<int> running = host.Proxy.Hang();
            await host.Service.HangRemaining.WaitAsync(TestHost.Patience);
            Task stop = host.Server.StopAsync();

            // The first failure may be a call the server's GoAway overtook (it did not run it); by
            // then the client has the GoAway, and every call after it meets a connection that drains.
            using (var patience = new CancellationTokenSource(TestHost.Patience))
            {
                while (true)
                {
                    patience.Token.ThrowIfCancellationRequested();
                    try
                    {
                        await host.Proxy.Add(1, 2).AsTask().WaitAsync(TestHost.Patience);
                    }
                    catch (MuxConnectionException)
                    {
                        break;
                    }
                }
            }

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
                Assert.Equal(MuxCloseReason.GoAway, failed.Reason);
                Assert.Contains("does not reconnect", failed.Message, StringComparison.Ordinal);
            }

            // Nothing the server still serves is lost: the running call ends with its answer, and
            // then the client closes.
            Assert.Equal(MuxClientState.Connected, host.Client.State);
            host.Service.Release();
            Assert.Equal(1, await running.WaitAsync(TestHost.Patience));
            await host.Client.Completion.WaitAsync(TestHost.Patience);
            await stop.WaitAsync(TestHost.Patience);
        }
    }
}
