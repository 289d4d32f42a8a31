using Mux.Tests.Infrastructure;

namespace Mux.Tests.Generated;

/// <summary>A body a derived service gives a method of its base (<c>Task&lt;int&gt; IBase.R() => …</c>)
/// runs on the proxy, as a body declared on the service does; the base's own proxy still calls.</summary>
public sealed class InheritedDefaultBodyTests
{
    [Fact]
    public async Task TheDerivedProxy_RunsTheBodyLocally_AndCallsTheRest()
    {
        var served = new CountingBase();
        var server = new MuxServer(new MuxServerOptions());
        await using (server)
        {
            server.AddService<ICountingBase>(served);
            await using MuxClient client = await server.ConnectInMemoryAsync().WaitAsync(TestHost.Patience);

            ICountingBase derived = client.CreateProxy<IOverridingDerived>();
            Assert.Equal(-1, await derived.R().WaitAsync(TestHost.Patience));
            Assert.Equal(2, await derived.S().WaitAsync(TestHost.Patience));
            Assert.Equal((0, 1), (served.RCalls, served.SCalls));

            Assert.Equal(1, await client.CreateProxy<ICountingBase>().R().WaitAsync(TestHost.Patience));
            Assert.Equal((1, 1), (served.RCalls, served.SCalls));
        }
    }

    private sealed class CountingBase : ICountingBase
    {
        private int _r;
        private int _s;

        public int RCalls => Volatile.Read(ref _r);

        public int SCalls => Volatile.Read(ref _s);

        public Task<int> R()
        {
            Interlocked.Increment(ref _r);
            return Task.FromResult(1);
        }

        public Task<int> S()
        {
            Interlocked.Increment(ref _s);
            return Task.FromResult(2);
        }
    }
}

[MuxService]
public interface ICountingBase
{
    Task<int> R();

    Task<int> S();
}

[MuxService]
public interface IOverridingDerived : ICountingBase
{
    Task<int> ICountingBase.R() => Task.FromResult(-1);
}
