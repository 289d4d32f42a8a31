using Microsoft.Extensions.Time.Testing;
using Mux.Tests.Infrastructure;

namespace Mux.Tests.Pipeline;

/// <summary>
/// Per-call timeouts (issue 25): a proxy bound to MuxCallOptions.Timeout uses it in place of
/// CallTimeout, shorter or longer, both for when the caller gives up and for the deadline the
/// Request carries to the server. The client's clock is fake: only the test moves it.
/// </summary>
public sealed class CallTimeoutTests
{
    [Theory]
    [InlineData(TransportKind.InMemory, 2)]
    [InlineData(TransportKind.Tcp, 2)]
    [InlineData(TransportKind.InMemory, 45)]
    [InlineData(TransportKind.Tcp, 45)]
    public async Task ABoundTimeout_ShorterOrLongerThanCallTimeout_IsTheDeadlineSentToTheServer_AndWhenTheCallerGivesUp(TransportKind kind, int seconds)
    {
        TimeSpan own = TimeSpan.FromSeconds(seconds);
        var clock = new FakeTimeProvider();
        var client = new MuxClientOptions { TimeProvider = clock, CallTimeout = TimeSpan.FromSeconds(30), KeepAliveInterval = Timeout.InfiniteTimeSpan };
        await using PipelineHost host = await PipelineHost.StartAsync(kind, clientOptions: client);
        IPipelineService bound = host.Client.CreateProxy<IPipelineService>(new MuxCallOptions { Timeout = own });

        Task<int> call = bound.Hang();

        // The server's handler sees the call's own time (its clock is real: less what the trip took).
        TimeSpan remaining = (await host.Service.HangRemaining.WaitAsync(TestHost.Patience)).GetValueOrDefault();
        Assert.InRange(remaining, own - TimeSpan.FromSeconds(1), own);

        // Just short of its own timeout (past CallTimeout, for the longer one) the call still waits;
        // a round trip on the default proxy gives a wrongly expired call time to show.
        clock.Advance(own - TimeSpan.FromMilliseconds(1));
        Assert.Equal(3, await host.Proxy.Add(1, 2).AsTask().WaitAsync(TestHost.Patience));
        Assert.False(call.IsCompleted, $"The call ended before its own {seconds} s had passed.");

        // The expiry scan runs at a tenth of the shortest own timeout: by then it has ended, naming it.
        clock.Advance(own / 10 + TimeSpan.FromMilliseconds(1));
        TimeoutException timeout = await Assert.ThrowsAsync<TimeoutException>(() => call.WaitAsync(TestHost.Patience));
        Assert.Equal($"The Mux call to IPipelineService.Hang did not complete within {seconds} s (its own Timeout: MuxCallOptions.Timeout, or MuxClientCall.Timeout as an interceptor set it).", timeout.Message);
    }

    [Theory]
    [InlineData(TransportKind.InMemory)]
    [InlineData(TransportKind.Tcp)]
    public async Task WithoutABoundTimeout_TheCallUsesCallTimeout_ForTheDeadlineSentAndForGivingUp(TransportKind kind)
    {
        var clock = new FakeTimeProvider();
        var client = new MuxClientOptions { TimeProvider = clock, CallTimeout = TimeSpan.FromSeconds(30), KeepAliveInterval = Timeout.InfiniteTimeSpan };
        await using PipelineHost host = await PipelineHost.StartAsync(kind, clientOptions: client);
        IPipelineService bound = host.Client.CreateProxy<IPipelineService>(new MuxCallOptions { Metadata = { ["tenant"] = "acme" } });

        Task<int> call = bound.Hang();

        TimeSpan remaining = (await host.Service.HangRemaining.WaitAsync(TestHost.Patience)).GetValueOrDefault();
        Assert.InRange(remaining, TimeSpan.FromSeconds(29), TimeSpan.FromSeconds(30));

        clock.Advance(TimeSpan.FromSeconds(30) + TimeSpan.FromSeconds(4));
        TimeoutException timeout = await Assert.ThrowsAsync<TimeoutException>(() => call.WaitAsync(TestHost.Patience));
        Assert.Equal("The Mux call to IPipelineService.Hang did not complete within 30 s (MuxClientOptions.CallTimeout).", timeout.Message);
    }
}
