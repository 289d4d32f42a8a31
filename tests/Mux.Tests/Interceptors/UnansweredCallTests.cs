using System.Reflection;
using Mux.Connection;
using Mux.Server;
using Mux.Tests.Infrastructure;
using Mux.Tests.Pipeline;

namespace Mux.Tests.Interceptors;

/// <summary>
/// Under a server interceptor, a call whose handler completed at once without handing back a
/// result (here an activator that returns without running it) has no outcome of its own. Its
/// pooled call object still held the outcome of the earlier call it served, and the caller got
/// that call's failure: another caller's exception and message.
/// </summary>
public sealed class UnansweredCallTests
{
    [Fact]
    public async Task ACallThatEndsWithoutAnAnswerUnderAnInterceptor_FailsAsItself_NeverWithAnEarlierCallsFailure()
    {
        var service = new FailingService();
        service.Release();
        var options = new MuxServerOptions { EnableDetailedErrors = true };
        options.Interceptors.Add(new PassThrough());
        await using var server = new MuxServer(options);
        server.AddService<IFailingService>(new SkipsTheHandlerOf("IFailingService.Echo", service));
        await using MuxClient client = await server.ConnectInMemoryAsync().WaitAsync(TestHost.Patience);
        IFailingService proxy = client.CreateProxy<IFailingService>();
        ServerConnection connection = server.Connections.Single();

        MuxRemoteException first = await Assert.ThrowsAsync<MuxRemoteException>(() => proxy.Fail("the first caller's failure").WaitAsync(TestHost.Patience));
        Assert.Equal("the first caller's failure", first.Message);

        // The next call takes the first one's pooled object.
        await Hosts.WaitUntilAsync(() => PooledTop(connection.Incoming) is not null, "the first call's object to be back in the pool");
        MuxRemoteException second = await Assert.ThrowsAsync<MuxRemoteException>(() => proxy.Echo(5).WaitAsync(TestHost.Patience));

        Assert.Equal(MuxStatusCode.HandlerFailed, second.StatusCode);
        Assert.Equal("IFailingService.Echo has no answer to send: its handler completed without handing back a result (MuxServerCall.ReturnAsync), or a MuxServiceActivator returned without running it.", second.Message);
    }

    /// <summary>Without an interceptor, nothing noticed the missing answer: the call finished as if it had answered, no
    /// Response or Error went, and the caller waited until its deadline (forever without one).</summary>
    [Fact]
    public async Task ACallThatEndsWithoutAnAnswerWithNoInterceptor_FailsAtOnce_WithWhyItHasNoAnswer()
    {
        var service = new FailingService();
        service.Release();
        await using var server = new MuxServer(new MuxServerOptions { EnableDetailedErrors = true });
        server.AddService<IFailingService>(new SkipsTheHandlerOf("IFailingService.Echo", service));
        await using MuxClient client = await server.ConnectInMemoryAsync(new MuxClientOptions { CallTimeout = Timeout.InfiniteTimeSpan })
            .WaitAsync(TestHost.Patience);
        IFailingService proxy = client.CreateProxy<IFailingService>();

        MuxRemoteException failure = await Assert.ThrowsAsync<MuxRemoteException>(() => proxy.Echo(5).WaitAsync(TestHost.Patience));

        Assert.Equal(MuxStatusCode.HandlerFailed, failure.StatusCode);
        Assert.Equal("IFailingService.Echo has no answer to send: its handler completed without handing back a result (MuxServerCall.ReturnAsync), or a MuxServiceActivator returned without running it.", failure.Message);

        // The call's slot and pooled object went back: the connection serves the next call.
        MuxRemoteException next = await Assert.ThrowsAsync<MuxRemoteException>(() => proxy.Fail("the next call's failure").WaitAsync(TestHost.Patience));
        Assert.Equal("the next call's failure", next.Message);
    }

    private static object? PooledTop(IncomingCalls calls)
    {
        object pool = typeof(IncomingCalls).GetField("_pool", BindingFlags.NonPublic | BindingFlags.Instance)!.GetValue(calls)!;
        return typeof(IncomingCallPool).GetField("_top", BindingFlags.NonPublic | BindingFlags.Instance)!.GetValue(pool);
    }

    /// <summary>Misuse: runs the handler of every method but <paramref name="method"/>, for which it
    /// returns at once.</summary>
    private sealed class SkipsTheHandlerOf(string method, IFailingService service) : MuxServiceActivator<IFailingService>
    {
        public override ValueTask InvokeAsync(MuxServerCall call, MuxMethodHandler<IFailingService> handler) =>
            call.MethodName == method ? ValueTask.CompletedTask : handler(service, call);
    }
}
