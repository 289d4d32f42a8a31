using Mux.Tests.Infrastructure;

namespace Mux.Tests.Server;

/// <summary>
/// <c>server.AddService(new MyActivator())</c>, without a type argument, binds to
/// AddService&lt;TService&gt;(TService implementation) with TService inferred as the activator's own
/// class: C# does not infer a type argument through a base class. That must fail at once and say
/// which call was meant, not later with a message about a missing dispatcher.
/// </summary>
public sealed class ActivatorOverloadTests
{
    [Fact]
    public async Task AnActivatorPassedWithoutItsServiceType_IsRefusedWithTheCallToMake()
    {
        await using var server = new MuxServer(new MuxServerOptions());

        var error = Assert.Throws<ArgumentException>(() => server.AddService(new PerCallActivator()));

        Assert.Equal("implementation", error.ParamName);
        Assert.Contains("AddService<Mux.Tests.Infrastructure.ITestService>(activator)", error.Message, StringComparison.Ordinal);
        Assert.Contains(nameof(PerCallActivator), error.Message, StringComparison.Ordinal);
    }

    /// <summary>Named, the same activator serves its calls.</summary>
    [Fact]
    public async Task AnActivatorPassedWithItsServiceType_ServesCalls()
    {
        await using var server = new MuxServer(new MuxServerOptions());
        server.AddService<ITestService>(new PerCallActivator());

        await using MuxClient client = await server.ConnectInMemoryAsync().WaitAsync(TestHost.Patience);
        Assert.Equal(5, await client.CreateProxy<ITestService>().Add(2, 3).AsTask().WaitAsync(TestHost.Patience));
    }

    /// <summary>A new TestService per call.</summary>
    private sealed class PerCallActivator : MuxServiceActivator<ITestService>
    {
        public override ValueTask InvokeAsync(MuxServerCall call, MuxMethodHandler<ITestService> handler) => handler(new TestService(), call);
    }
}
