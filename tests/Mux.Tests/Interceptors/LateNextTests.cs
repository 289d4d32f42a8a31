using System.Collections.Concurrent;
using Mux.Tests.Infrastructure;
using Mux.Tests.Pipeline;

namespace Mux.Tests.Interceptors;

/// <summary>
/// An interceptor keeps its next() and returns without calling it, and more interceptors sit
/// inside it: the call fails as not made, and the kept next(), called later, is refused at once,
/// without running the interceptors inside for a call that is over (on the server, with a pooled
/// call that may be another's by then).
/// </summary>
public sealed class LateNextTests
{
    [Theory]
    [InlineData(false)]
    [InlineData(true)]
    public async Task AKeptNextCalledAfterTheChainReturned_IsRefusedAtOnce_TheInterceptorsInsideDoNotRunLate(bool onTheServer)
    {
        var late = new KeepsNext();
        var log = new ConcurrentQueue<string>();
        var server = new MuxServerOptions { EnableDetailedErrors = true };
        var client = new MuxClientOptions();
        if (onTheServer)
        {
            server.Interceptors.Add(late);
            server.Interceptors.Add(new LoggingServerInterceptor("inner", log));
        }
        else
        {
            client.Interceptors.Add(late);
            client.Interceptors.Add(new LoggingClientInterceptor("inner", log));
        }

        await using PipelineHost host = await PipelineHost.StartAsync(TransportKind.InMemory, server, client, log);

        Exception failed = await Assert.ThrowsAnyAsync<Exception>(() => host.Proxy.Add(1, 2).AsTask().WaitAsync(TestHost.Patience));
        Assert.StartsWith("The call to IPipelineService.Add was not made", failed.Message, StringComparison.Ordinal);

        // Before, the kept next() ran the interceptor inside it ("inner enter"), whose own next()
        // was then refused: a call its caller was told was not made went part of the way through.
        InvalidOperationException refused = Assert.Throws<InvalidOperationException>(() => { _ = late.Next!(); });
        Assert.StartsWith("next() was called after the Mux interceptors", refused.Message, StringComparison.Ordinal);
        Assert.Empty(log);
        Assert.Equal(0, host.Service.Runs);
    }
}
