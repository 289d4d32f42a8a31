using Mux.Tests.Infrastructure;

namespace Mux.Tests.Interceptors;

/// <summary>
/// A server interceptor that returns without awaiting next(), around a handler that fails: the
/// caller gets the handler's own failure whichever finished first, the handler (at once, or while
/// the interceptor still ran) or the interceptor. Only an interceptor that took the failure from
/// the task of next() and returned without throwing makes it "caught". Each order is forced with
/// gates, never with timing.
/// </summary>
public sealed class AbandonedHandlerFailureTests
{
    public enum Order
    {
        /// <summary>The handler fails before it ever waits, inside next().</summary>
        HandlerFailsAtOnce,

        /// <summary>The handler fails after waiting, while the interceptor has not returned yet.</summary>
        HandlerFailsBeforeTheInterceptorReturns,

        /// <summary>The interceptor returns first; the handler fails after.</summary>
        InterceptorReturnsBeforeTheHandlerFails,
    }

    [Theory]
    [InlineData(Order.HandlerFailsAtOnce)]
    [InlineData(Order.HandlerFailsBeforeTheInterceptorReturns)]
    [InlineData(Order.InterceptorReturnsBeforeTheHandlerFails)]
    public async Task AServerInterceptorThatReturnsWithoutAwaitingNext_TheCallerGetsTheHandlersOwnFailure_WhicheverFinishedFirst(Order order)
    {
        var abandons = new AbandonsNext();
        var returned = new SignalsReturnOfInner();
        var server = new MuxServerOptions { EnableDetailedErrors = true };
        server.Interceptors.Add(returned);
        server.Interceptors.Add(abandons);
        await using var host = await FailingHost.StartAsync(server);
        if (order == Order.HandlerFailsAtOnce)
        {
            host.Service.Release();
        }

        // Before, the caller got "a server interceptor caught the exception" when the handler had
        // failed before the interceptor returned, and the handler's own failure when after.
        Task<int> call = host.Proxy.Fail("the handler's own failure");
        await abandons.Entered.Task.WaitAsync(TestHost.Patience);
        if (order == Order.HandlerFailsBeforeTheInterceptorReturns)
        {
            host.Service.Release();
            await Hosts.WaitUntilAsync(() => abandons.HandlerCompleted, "the handler to fail, the interceptor still running");
        }

        abandons.Return();
        if (order == Order.InterceptorReturnsBeforeTheHandlerFails)
        {
            await returned.InnerReturned.Task.WaitAsync(TestHost.Patience);
            Assert.False(abandons.HandlerCompleted);
            host.Service.Release();
        }

        MuxRemoteException failed = await Assert.ThrowsAsync<MuxRemoteException>(() => call.WaitAsync(TestHost.Patience));
        Assert.Equal(MuxStatusCode.HandlerFailed, failed.StatusCode);
        Assert.Equal("the handler's own failure", failed.Message);
        Assert.Equal("System.InvalidOperationException", failed.RemoteExceptionType);

        // The call's pooled object is free once it ended: the next call gets its own answer.
        Assert.Equal(5, await host.Proxy.Echo(5).WaitAsync(TestHost.Patience));

        // The task of next(), awaited only now that its call has ended, is refused, and says why;
        // the caller had the handler's failure all the same. Before, it threw that failure again
        // while the pooled call was not serving another handler, and a bare "Operation is not valid
        // due to the current state of the object" once it was.
        InvalidOperationException late = await Assert.ThrowsAsync<InvalidOperationException>(async () => await abandons.Kept);
        Assert.StartsWith("The task of a server interceptor's next() was awaited after its call had ended", late.Message);
    }

    [Theory]
    [InlineData(false)]
    [InlineData(true)]
    public async Task AServerInterceptorThatAwaitsNextAndCatchesTheFailure_FailsTheCallAsCaught_WithTheHandlersFailureInside(bool handlerFailsAtOnce)
    {
        var server = new MuxServerOptions { EnableDetailedErrors = true };
        server.Interceptors.Add(new CatchesNext());
        await using var host = await FailingHost.StartAsync(server);
        if (handlerFailsAtOnce)
        {
            host.Service.Release();
        }

        Task<int> call = host.Proxy.Fail("the handler's own failure");
        await host.Service.Started.Task.WaitAsync(TestHost.Patience);
        host.Service.Release();

        MuxRemoteException failed = await Assert.ThrowsAsync<MuxRemoteException>(() => call.WaitAsync(TestHost.Patience));
        Assert.Equal(MuxStatusCode.HandlerFailed, failed.StatusCode);
        Assert.Equal("IFailingService.Fail has no answer to send: its handler failed, and a server interceptor caught the exception without throwing one of its own.", failed.Message);
        Assert.Equal(5, await host.Proxy.Echo(5).WaitAsync(TestHost.Patience));
    }

    /// <summary>Misuse: starts next(), keeps its task without awaiting it, and returns when the
    /// test says.</summary>
    private sealed class AbandonsNext : IMuxServerInterceptor
    {
        private readonly TaskCompletionSource _return = new(TaskCreationOptions.RunContinuationsAsynchronously);
        private ValueTask _handler;
        private volatile bool _kept;

        /// <summary>Completes once next() has been called.</summary>
        public TaskCompletionSource Entered { get; } = new(TaskCreationOptions.RunContinuationsAsynchronously);

        /// <summary>Whether the task of next() has completed (read without taking its outcome).</summary>
        public bool HandlerCompleted => _kept && _handler.IsCompleted;

        public void Return() => _return.TrySetResult();

        /// <summary>The task of next(), kept.</summary>
        public ValueTask Kept => _handler;

        public async ValueTask InvokeAsync(MuxCallContext call, Func<ValueTask> next)
        {
            if (call.MethodName != "IFailingService.Fail")
            {
                await next();
                return;
            }

            _handler = next();
            _kept = true;
            Entered.TrySetResult();
            await _return.Task;
        }
    }

    /// <summary>Awaits next() (the interceptor inside it) and says when it has returned.</summary>
    private sealed class SignalsReturnOfInner : IMuxServerInterceptor
    {
        public TaskCompletionSource InnerReturned { get; } = new(TaskCreationOptions.RunContinuationsAsynchronously);

        public async ValueTask InvokeAsync(MuxCallContext call, Func<ValueTask> next)
        {
            await next();
            InnerReturned.TrySetResult();
        }
    }

    /// <summary>Catches whatever next() throws, and returns.</summary>
    private sealed class CatchesNext : IMuxServerInterceptor
    {
        public async ValueTask InvokeAsync(MuxCallContext call, Func<ValueTask> next)
        {
            try
            {
                await next();
            }
            catch (InvalidOperationException)
            {
                // Dropped: the case under test.
            }
        }
    }
}

/// <summary>A server serving <see cref="IFailingService"/> in memory, and its client.</summary>
internal sealed class FailingHost(MuxServer server, MuxClient client, FailingService service) : IAsyncDisposable
{
    public FailingService Service => service;

    public IFailingService Proxy { get; } = client.CreateProxy<IFailingService>();

    public static async Task<FailingHost> StartAsync(MuxServerOptions options)
    {
        var service = new FailingService();
        var server = new MuxServer(options);
        server.AddService<IFailingService>(service);
        MuxClient client = await server.ConnectInMemoryAsync().WaitAsync(TestHost.Patience);
        return new FailingHost(server, client, service);
    }

    public async ValueTask DisposeAsync()
    {
        service.Release();
        await client.DisposeAsync().AsTask().WaitAsync(TestHost.Patience);
        await server.DisposeAsync().AsTask().WaitAsync(TestHost.Patience + TestHost.Patience);
    }
}

/// <summary>A handler that fails when the test releases it (at once, if released already).</summary>
[MuxService]
public interface IFailingService
{
    Task<int> Fail(string message);

    Task<int> Echo(int value);
}

/// <summary>The server side of <see cref="IFailingService"/>.</summary>
public sealed class FailingService : IFailingService
{
    private readonly TaskCompletionSource _release = new(TaskCreationOptions.RunContinuationsAsynchronously);

    /// <summary>Completes when a Fail handler has started.</summary>
    public TaskCompletionSource Started { get; } = new(TaskCreationOptions.RunContinuationsAsynchronously);

    public void Release() => _release.TrySetResult();

    public Task<int> Echo(int value) => Task.FromResult(value);

    public async Task<int> Fail(string message)
    {
        Started.TrySetResult();
        await _release.Task;
        throw new InvalidOperationException(message);
    }
}
