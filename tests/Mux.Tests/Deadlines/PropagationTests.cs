using Microsoft.Extensions.Time.Testing;
using Mux.Tests.Infrastructure;

namespace Mux.Tests.Deadlines;

/// <summary>
/// client → server A, whose handler calls → server B. With
/// <see cref="MuxServerOptions.EnableCallContextPropagation"/> on A, B's handler sees the first
/// caller's deadline (what is left of it), not A's own client's longer CallTimeout; without it
/// (the default) nothing is passed on.
/// </summary>
public class PropagationTests
{
    [Fact]
    public async Task WithPropagation_TheSecondHandlerSeesTheFirstCallersDeadline_NotItsOwnClientsLongerTimeout()
    {
        await using Hops hops = await Hops.StartAsync(propagate: true, firstTimeout: TimeSpan.FromSeconds(20), nextHopTimeout: TimeSpan.FromHours(1));

        long remaining = await hops.First.Proxy.NextHopRemainingMilliseconds().WaitAsync(TestHost.Patience);

        Assert.InRange(remaining, 1, 20_000);
    }

    [Fact]
    public async Task WithoutPropagation_TheSecondHandlerSeesItsOwnClientsTimeout()
    {
        await using Hops hops = await Hops.StartAsync(propagate: false, firstTimeout: TimeSpan.FromSeconds(20), nextHopTimeout: TimeSpan.FromHours(1));

        long remaining = await hops.First.Proxy.NextHopRemainingMilliseconds().WaitAsync(TestHost.Patience);

        Assert.InRange(remaining, (long)TimeSpan.FromMinutes(59).TotalMilliseconds, (long)TimeSpan.FromHours(1).TotalMilliseconds);
    }

    [Fact]
    public async Task WithPropagation_ASecondClientWithoutATimeout_StillSendsTheInheritedDeadline()
    {
        await using Hops hops = await Hops.StartAsync(propagate: true, firstTimeout: TimeSpan.FromSeconds(20), nextHopTimeout: Timeout.InfiniteTimeSpan);

        long remaining = await hops.First.Proxy.NextHopRemainingMilliseconds().WaitAsync(TestHost.Patience);

        Assert.InRange(remaining, 1, 20_000);
    }

    [Fact]
    public async Task WithPropagation_TheSecondHandlersTokenFiresAtTheInheritedDeadline_AndTheMiddleCallTimesOutSayingSo()
    {
        // Only B's clock moves; the middle handler passes no token and its client has no timeout,
        // so only the deadline inherited from the first call can end the second one.
        var lastClock = new FakeTimeProvider();
        await using Hops hops = await Hops.StartAsync(propagate: true, firstTimeout: TimeSpan.FromSeconds(20), nextHopTimeout: Timeout.InfiniteTimeSpan, lastClock);

        Task call = hops.First.Proxy.NextHopWaitForDeadline();
        MuxCallContext last = await hops.Last.Service.Waiting.Task.WaitAsync(TestHost.Patience);
        Assert.InRange(last.RemainingTime!.Value, TimeSpan.FromSeconds(1), TimeSpan.FromSeconds(20));
        lastClock.Advance(TimeSpan.FromSeconds(20));

        Assert.Same(last, await hops.Last.Service.TokenFired.Task.WaitAsync(TestHost.Patience));
        Exception middle = await hops.First.Service.NextHopFailure.Task.WaitAsync(TestHost.Patience);
        TimeoutException timeout = Assert.IsType<TimeoutException>(middle);
        Assert.Equal(
            "The Mux call to IDeadlineService.WaitForDeadline did not complete by the deadline it inherited from the call this server handler serves (IDeadlineService.NextHopWaitForDeadline, MuxCallContext.Current), which came sooner than MuxClientOptions.CallTimeout.",
            timeout.Message);

        // The middle handler let the TimeoutException through: its caller sees a handler failure.
        MuxRemoteException remote = await Assert.ThrowsAsync<MuxRemoteException>(() => call.WaitAsync(TestHost.Patience));
        Assert.Equal(MuxStatusCode.HandlerFailed, remote.StatusCode);
    }

    [Fact]
    public async Task CurrentContext_IsNullOutsideHandlers()
    {
        await using Hops hops = await Hops.StartAsync(propagate: true, firstTimeout: TimeSpan.FromSeconds(20), nextHopTimeout: TimeSpan.FromHours(1));

        Assert.Null(MuxCallContext.Current);
        Assert.InRange(await hops.First.Proxy.NextHopRemainingMilliseconds().WaitAsync(TestHost.Patience), 1, 20_000);
        Assert.Null(MuxCallContext.Current);
    }

    /// <summary>The first server (its handlers call on) and the last, each with an in-memory client.</summary>
    private sealed class Hops : IAsyncDisposable
    {
        private Hops(Served first, Served last)
        {
            First = first;
            Last = last;
        }

        /// <summary>Server A and the test's client of it; A's handlers call <see cref="Last"/>.</summary>
        public Served First { get; }

        /// <summary>Server B and A's client of it.</summary>
        public Served Last { get; }

        public static async Task<Hops> StartAsync(bool propagate, TimeSpan firstTimeout, TimeSpan nextHopTimeout, TimeProvider? lastClock = null)
        {
            Served last = await Served.StartAsync(
                new MuxClientOptions { CallTimeout = nextHopTimeout },
                new MuxServerOptions { TimeProvider = lastClock ?? TimeProvider.System, KeepAliveInterval = Timeout.InfiniteTimeSpan });
            Served first = await Served.StartAsync(
                new MuxClientOptions { CallTimeout = firstTimeout },
                new MuxServerOptions { EnableCallContextPropagation = propagate },
                last.Client.CreateProxy<IDeadlineService>());
            return new Hops(first, last);
        }

        public async ValueTask DisposeAsync()
        {
            await First.DisposeAsync();
            await Last.DisposeAsync();
        }
    }
}
