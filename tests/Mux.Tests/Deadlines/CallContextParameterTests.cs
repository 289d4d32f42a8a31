using Mux.Tests.Infrastructure;

namespace Mux.Tests.Deadlines;

/// <summary>A [MuxService] method that declares a <see cref="MuxCallContext"/> parameter gets its
/// call's context from the generated dispatcher; the proxy sends nothing for it.</summary>
public class CallContextParameterTests
{
    [Fact]
    public async Task Handler_DeclaringACallContext_GetsOneThatNamesItsCall_WhileTheArgumentsStillArrive()
    {
        await using Probe probe = await Probe.StartAsync(new MuxClientOptions { CallTimeout = Timeout.InfiniteTimeSpan });

        string seen = await probe.Proxy.Describe(42).WaitAsync(TestHost.Patience);

        // No CallTimeout: the caller sent no deadline, so the context has none either.
        Assert.Equal("42|ICallContextProbe.Describe|True|False", seen);
    }

    [Fact]
    public async Task ContextToken_FiresWhenTheCallerCancels_AndAContextKeptPastItsCallSaysTheCallIsOver()
    {
        await using Probe probe = await Probe.StartAsync(new MuxClientOptions());
        using var cancel = new CancellationTokenSource();

        Task call = probe.Proxy.WaitOnContextToken(null, cancel.Token);
        MuxCallContext running = await probe.Service.Waiting.Task.WaitAsync(TestHost.Patience);
        Assert.True(running.IsCallRunning);
        Assert.False(running.CancellationToken.IsCancellationRequested);
        cancel.Cancel();

        MuxCallContext fired = await probe.Service.TokenFired.Task.WaitAsync(TestHost.Patience);
        Assert.Same(running, fired);
        await Assert.ThrowsAnyAsync<OperationCanceledException>(() => call.WaitAsync(TestHost.Patience));

        // The server reuses the call object once the handler is done; the context it handed out
        // must not describe the next call. Another call on the same connection proves the reuse.
        Assert.StartsWith("1|ICallContextProbe.Describe|True|", await probe.Proxy.Describe(1).WaitAsync(TestHost.Patience), StringComparison.Ordinal);
        await WaitUntilAsync(() => !fired.IsCallRunning);
        Assert.True(fired.CancellationToken.IsCancellationRequested);
        Assert.Equal("ICallContextProbe.WaitOnContextToken", fired.MethodName);
    }

    private static async Task WaitUntilAsync(Func<bool> condition)
    {
        using var patience = new CancellationTokenSource(TestHost.Patience);
        while (!condition())
        {
            await Task.Delay(10, patience.Token);
        }
    }

    /// <summary>A server with a <see cref="CallContextProbe"/> and an in-memory client.</summary>
    internal sealed class Probe : IAsyncDisposable
    {
        private readonly MuxServer _server;
        private readonly MuxClient _client;

        private Probe(MuxServer server, MuxClient client, CallContextProbe service)
        {
            _server = server;
            _client = client;
            Service = service;
            Proxy = client.CreateProxy<ICallContextProbe>();
        }

        public CallContextProbe Service { get; }

        public ICallContextProbe Proxy { get; }

        public static async Task<Probe> StartAsync(MuxClientOptions clientOptions, MuxServerOptions? serverOptions = null)
        {
            var service = new CallContextProbe();
            var server = new MuxServer(serverOptions ?? new MuxServerOptions());
            server.AddService<ICallContextProbe>(service);
            MuxClient client = await server.ConnectInMemoryAsync(clientOptions).WaitAsync(TestHost.Patience);
            return new Probe(server, client, service);
        }

        public async ValueTask DisposeAsync()
        {
            await _client.DisposeAsync().AsTask().WaitAsync(TestHost.Patience);
            using var stop = new CancellationTokenSource(TestHost.Patience);
            await _server.StopAsync(stop.Token).WaitAsync(TestHost.Patience + TestHost.Patience);
        }
    }
}
