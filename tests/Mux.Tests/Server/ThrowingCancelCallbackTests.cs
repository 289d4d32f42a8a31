using Mux.Tests.Infrastructure;

namespace Mux.Tests.Server;

/// <summary>A handler that registers a callback on its CancellationToken, and the callback throws
/// when the call is cancelled (by the client, by its deadline, by the connection closing). The
/// cancel runs on a thread-pool item or the deadline timer, where an escaping exception ends the
/// process: the failure is the handler's, so it is logged and the cancellation goes on.</summary>
public sealed class ThrowingCancelCallbackTests
{
    private const int CancellationCallbackFailedEvent = 28;

    [Fact]
    public async Task ACallbackThatThrows_WhenTheClientCancels_IsLogged_AndTheConnectionServesOn()
    {
        await using var host = await CallbackHost.StartAsync();
        IThrowingCallbackService proxy = host.Client.CreateProxy<IThrowingCallbackService>();

        using var cancel = new CancellationTokenSource();
        Task waiting = proxy.Wait(cancel.Token);
        await host.Service.Started.Task.WaitAsync(TestHost.Patience);
        cancel.Cancel();

        await Assert.ThrowsAnyAsync<OperationCanceledException>(() => waiting.WaitAsync(TestHost.Patience));
        await host.Service.Ended.Task.WaitAsync(TestHost.Patience);
        await Hosts.WaitUntilAsync(() => host.Log.Entries.Any(entry => entry.EventId.Id == CancellationCallbackFailedEvent), "the callback's failure to be logged");
        await AssertServesOnAsync(host);
    }

    [Fact]
    public async Task ACallbackThatThrows_AtTheCallsDeadline_IsLogged_AndTheCallTimesOut()
    {
        await using var host = await CallbackHost.StartAsync();
        IThrowingCallbackService proxy = host.Client.CreateProxy<IThrowingCallbackService>(new MuxCallOptions { Timeout = TimeSpan.FromMilliseconds(200) });

        // The deadline must pass while the handler runs. On a loaded machine it can pass before the
        // server has dispatched the call, which then ends without running (rightly: an expired or
        // cancelled call is refused), so the call is made again until a handler ran into its deadline.
        Mux.Server.ServerConnection connection = host.Server.Connections.Single();
        for (int attempt = 1; !host.Service.Ended.Task.IsCompleted; attempt++)
        {
            Assert.True(attempt <= 5, "No call's handler was running when its deadline passed.");
            await Assert.ThrowsAnyAsync<Exception>(() => proxy.Wait().WaitAsync(TestHost.Patience));
            await Hosts.WaitUntilAsync(() => host.Service.Ended.Task.IsCompleted || connection.Incoming.Count == 0, "the server to end the call");
        }

        await Hosts.WaitUntilAsync(() => host.Log.Entries.Any(entry => entry.EventId.Id == CancellationCallbackFailedEvent), "the callback's failure to be logged");
        await AssertServesOnAsync(host);
    }

    [Fact]
    public async Task ACallbackThatThrows_WhenTheConnectionCloses_IsLogged_AndTheConnectionCompletes()
    {
        await using var host = await CallbackHost.StartAsync();
        Mux.Server.ServerConnection connection = host.Server.Connections.Single();
        Task waiting = host.Client.CreateProxy<IThrowingCallbackService>().Wait();
        await host.Service.Started.Task.WaitAsync(TestHost.Patience);

        await host.Client.DisposeAsync();

        await host.Service.Ended.Task.WaitAsync(TestHost.Patience);
        await connection.Completion.WaitAsync(TestHost.Patience);
        await Hosts.WaitUntilAsync(() => host.Log.Entries.Any(entry => entry.EventId.Id == CancellationCallbackFailedEvent), "the callback's failure to be logged");
        await Assert.ThrowsAsync<MuxConnectionException>(() => waiting.WaitAsync(TestHost.Patience));
    }

    /// <summary>A new call on the same connection runs and returns: the connection is not harmed.</summary>
    private static async Task AssertServesOnAsync(CallbackHost host)
    {
        Assert.Equal(42, await host.Client.CreateProxy<IThrowingCallbackService>().Echo(42).WaitAsync(TestHost.Patience));
    }
}

/// <summary>A server serving <see cref="IThrowingCallbackService"/> in memory, with a captured log.</summary>
internal sealed class CallbackHost(MuxServer server, MuxClient client, CapturedLog log, ThrowingCallbackService service) : IAsyncDisposable
{
    public MuxServer Server => server;

    public MuxClient Client => client;

    public CapturedLog Log => log;

    public ThrowingCallbackService Service => service;

    public static async Task<CallbackHost> StartAsync()
    {
        var log = new CapturedLog();
        var service = new ThrowingCallbackService();
        var server = new MuxServer(new MuxServerOptions { LoggerFactory = log });
        server.AddService<IThrowingCallbackService>(service);
        MuxClient client = await server.ConnectInMemoryAsync().WaitAsync(TestHost.Patience);
        return new CallbackHost(server, client, log, service);
    }

    public async ValueTask DisposeAsync()
    {
        await client.DisposeAsync().AsTask().WaitAsync(TestHost.Patience);
        await server.DisposeAsync().AsTask().WaitAsync(TestHost.Patience + TestHost.Patience);
    }
}

/// <summary>A handler that registers a callback that throws on its token, then waits for it.</summary>
[MuxService]
public interface IThrowingCallbackService
{
    Task Wait(CancellationToken cancellationToken = default);

    Task<int> Echo(int value);
}

/// <summary>The server side of <see cref="IThrowingCallbackService"/>.</summary>
public sealed class ThrowingCallbackService : IThrowingCallbackService
{
    /// <summary>Completes when a Wait handler has registered its callback.</summary>
    public TaskCompletionSource Started { get; } = new(TaskCreationOptions.RunContinuationsAsynchronously);

    /// <summary>Completes when a Wait handler has seen its token fire.</summary>
    public TaskCompletionSource Ended { get; } = new(TaskCreationOptions.RunContinuationsAsynchronously);

    public Task<int> Echo(int value) => Task.FromResult(value);

    public async Task Wait(CancellationToken cancellationToken = default)
    {
        cancellationToken.Register(static () => throw new InvalidOperationException("The handler's cancellation callback failed."));
        Started.TrySetResult();
        try
        {
            await Task.Delay(Timeout.Infinite, cancellationToken);
        }
        finally
        {
            Ended.TrySetResult();
        }
    }
}
