using System.Collections.Concurrent;
using Mux.Tests.Infrastructure;

namespace Mux.Tests.Pipeline;

/// <summary>
/// Server and client interceptors (issue 25): their order on both sides, a refusal before next(),
/// a failure after it, the status the caller gets, and streaming calls, around which each runs once.
/// </summary>
public sealed class InterceptorTests
{
    [Theory]
    [InlineData(TransportKind.InMemory)]
    [InlineData(TransportKind.Tcp)]
    public async Task Interceptors_RunInRegistrationOrder_OnBothSides_TheFirstAddedOutermost(TransportKind kind)
    {
        var log = new ConcurrentQueue<string>();
        var server = new MuxServerOptions();
        server.Interceptors.Add(new LoggingServerInterceptor("s1", log));
        server.Interceptors.Add(new LoggingServerInterceptor("s2", log));
        var client = new MuxClientOptions();
        client.Interceptors.Add(new LoggingClientInterceptor("c1", log));
        client.Interceptors.Add(new LoggingClientInterceptor("c2", log));
        await using PipelineHost host = await PipelineHost.StartAsync(kind, server, client, log);

        Assert.Equal(5, await host.Proxy.Add(2, 3).AsTask().WaitAsync(TestHost.Patience));

        // The server's interceptors have all returned before the answer is sent, so the order is exact.
        Assert.Equal(
            [
                "c1 enter IPipelineService.Add", "c2 enter IPipelineService.Add",
                "s1 enter IPipelineService.Add", "s2 enter IPipelineService.Add",
                "handler Add",
                "s2 exit IPipelineService.Add", "s1 exit IPipelineService.Add",
                "c2 exit IPipelineService.Add", "c1 exit IPipelineService.Add",
            ],
            log.ToArray());
    }

    [Theory]
    [InlineData(TransportKind.InMemory)]
    [InlineData(TransportKind.Tcp)]
    public async Task AServerInterceptorThatThrowsBeforeNext_RefusesTheCall_TheHandlerDoesNotRun_AndTheCallerGetsItsStatus(TransportKind kind)
    {
        var server = new MuxServerOptions();
        server.Interceptors.Add(new TenantCheck());
        await using PipelineHost host = await PipelineHost.StartAsync(kind, server);

        MuxRemoteException refused = await Assert.ThrowsAsync<MuxRemoteException>(() => host.Proxy.Add(1, 2).AsTask().WaitAsync(TestHost.Patience));

        Assert.Equal(MuxStatusCode.PermissionDenied, refused.StatusCode);
        Assert.Equal("IPipelineService.Add needs a tenant.", refused.Message);
        Assert.Equal(0, host.Service.Runs);

        // The connection goes on: the same call with a tenant runs, once.
        IPipelineService acme = host.Client.CreateProxy<IPipelineService>(new MuxCallOptions { Metadata = { ["tenant"] = "acme" } });
        Assert.Equal(3, await acme.Add(1, 2).AsTask().WaitAsync(TestHost.Patience));
        Assert.Equal(1, host.Service.Runs);
    }

    [Theory]
    [InlineData(TransportKind.InMemory, false)]
    [InlineData(TransportKind.InMemory, true)]
    [InlineData(TransportKind.Tcp, false)]
    [InlineData(TransportKind.Tcp, true)]
    public async Task AServerInterceptorThatThrowsAfterNext_FailsTheCallThoughTheHandlerSucceeded_AsHandlerFailed_WithDetailOnlyWhenEnabled(TransportKind kind, bool detailed)
    {
        var server = new MuxServerOptions { EnableDetailedErrors = detailed };
        server.Interceptors.Add(new ThrowAfterNext(() => new InvalidOperationException("audit store is down")));
        await using PipelineHost host = await PipelineHost.StartAsync(kind, server);

        MuxRemoteException failed = await Assert.ThrowsAsync<MuxRemoteException>(() => host.Proxy.Add(1, 2).AsTask().WaitAsync(TestHost.Patience));

        Assert.Equal(MuxStatusCode.HandlerFailed, failed.StatusCode);
        Assert.Equal(1, host.Service.Runs);
        if (detailed)
        {
            Assert.Equal("audit store is down", failed.Message);
            Assert.Equal("System.InvalidOperationException", failed.RemoteExceptionType);
        }
        else
        {
            Assert.Equal("IPipelineService.Add failed on the server. The server's log has the exception; MuxServerOptions.EnableDetailedErrors sends its message to callers.", failed.Message);
            Assert.Null(failed.RemoteExceptionType);
        }

        // Only that call failed: the next one's answer arrives too (and fails the same way).
        await Assert.ThrowsAsync<MuxRemoteException>(() => host.Proxy.Add(3, 4).AsTask().WaitAsync(TestHost.Patience));
        Assert.Equal(2, host.Service.Runs);
    }

    [Theory]
    [InlineData(TransportKind.InMemory)]
    [InlineData(TransportKind.Tcp)]
    public async Task AServerInterceptorThatReturnsWithoutAwaitingNext_TheCallWaitsForItsHandler_AndTheNextCallGetsItsOwnAnswer(TransportKind kind)
    {
        var forgetful = new ForgetsNext();
        var server = new MuxServerOptions();
        server.Interceptors.Add(forgetful);
        await using PipelineHost host = await PipelineHost.StartAsync(kind, server);

        Task<int> hang = host.Proxy.Hang();
        await Hosts.WaitUntilAsync(() => host.Service.Runs == 1 && forgetful.Returned == 1, "the handler to run and the interceptor to return");
        host.Service.Release();

        // Before, the call failed at once (no answer when the interceptor returned) and its pooled
        // object went to the next call while the handler ran: its late Response carried that call's id.
        Assert.Equal(1, await hang.WaitAsync(TestHost.Patience));
        Assert.Equal(3, await host.Proxy.Add(1, 2).AsTask().WaitAsync(TestHost.Patience));
        Assert.Equal(7, await host.Proxy.Add(3, 4).AsTask().WaitAsync(TestHost.Patience));
    }

    [Theory]
    [InlineData(TransportKind.InMemory)]
    [InlineData(TransportKind.Tcp)]
    public async Task AServerInterceptorThatThrowsMuxRemoteExceptionAfterNext_SendsItsStatusAndMessage(TransportKind kind)
    {
        var server = new MuxServerOptions();
        server.Interceptors.Add(new ThrowAfterNext(() => new MuxRemoteException(MuxStatusCode.Unavailable, "quota store unavailable")));
        await using PipelineHost host = await PipelineHost.StartAsync(kind, server);

        MuxRemoteException failed = await Assert.ThrowsAsync<MuxRemoteException>(() => host.Proxy.Add(1, 2).AsTask().WaitAsync(TestHost.Patience));

        Assert.Equal(MuxStatusCode.Unavailable, failed.StatusCode);
        Assert.Equal("quota store unavailable", failed.Message);
    }

    [Theory]
    [InlineData(TransportKind.InMemory)]
    [InlineData(TransportKind.Tcp)]
    public async Task AClientInterceptorThatThrowsAfterNext_GivesTheCallerItsException_AfterTheServerRanTheCall(TransportKind kind)
    {
        var client = new MuxClientOptions();
        client.Interceptors.Add(new ThrowAfterNext(() => new TimeZoneNotFoundException("client-side check failed")));
        await using PipelineHost host = await PipelineHost.StartAsync(kind, clientOptions: client);

        TimeZoneNotFoundException failed = await Assert.ThrowsAsync<TimeZoneNotFoundException>(() => host.Proxy.Add(1, 2).AsTask().WaitAsync(TestHost.Patience));

        Assert.Equal("client-side check failed", failed.Message);
        Assert.Equal(1, host.Service.Runs);
    }

    [Theory]
    [InlineData(TransportKind.InMemory)]
    [InlineData(TransportKind.Tcp)]
    public async Task AClientInterceptorThatCatchesTheCallsFailureWithoutThrowing_FailsTheCall_InsteadOfReturningADefaultResult(TransportKind kind)
    {
        var server = new MuxServerOptions { EnableDetailedErrors = true };
        server.Interceptors.Add(new ThrowAfterNext(() => new MuxRemoteException(MuxStatusCode.Unavailable, "quota store unavailable")));
        var client = new MuxClientOptions();
        client.Interceptors.Add(new Swallow());
        await using PipelineHost host = await PipelineHost.StartAsync(kind, server, client);

        // A call with a result has none to return; one without would report a failure as done.
        InvalidOperationException add = await Assert.ThrowsAsync<InvalidOperationException>(() => host.Proxy.Add(1, 2).AsTask().WaitAsync(TestHost.Patience));
        InvalidOperationException fail = await Assert.ThrowsAsync<InvalidOperationException>(() => host.Proxy.Fail("handler failed").WaitAsync(TestHost.Patience));

        Assert.Equal("The call to IPipelineService.Add has no result to return: it failed, and a client interceptor caught the exception without throwing one of its own.", add.Message);
        Assert.Equal("quota store unavailable", Assert.IsType<MuxRemoteException>(add.InnerException).Message);
        Assert.StartsWith("The call to IPipelineService.Fail has no result to return", fail.Message, StringComparison.Ordinal);
        Assert.Equal(2, host.Service.Runs);
    }

    [Theory]
    [InlineData(TransportKind.InMemory)]
    [InlineData(TransportKind.Tcp)]
    public async Task AClientInterceptorThatCatchesAStreamsFailureWithoutThrowing_FailsTheCallersLoop_InsteadOfEndingItAsIfComplete(TransportKind kind)
    {
        var server = new MuxServerOptions();
        server.Interceptors.Add(new ThrowAfterNext(() => new MuxRemoteException(MuxStatusCode.Unavailable, "stream store down")));
        var client = new MuxClientOptions();
        client.Interceptors.Add(new Swallow());
        await using PipelineHost host = await PipelineHost.StartAsync(kind, server, client);

        var items = new List<int>();
        InvalidOperationException failed = await Assert.ThrowsAsync<InvalidOperationException>(async () =>
        {
            await foreach (int item in host.Proxy.Count(2).WithCancellation(new CancellationTokenSource(TestHost.Patience).Token))
            {
                items.Add(item);
            }
        });

        // Before, the loop ended as if the stream were complete: a cut-off stream read as a whole one.
        Assert.Equal([1, 2], items);
        Assert.Equal("The stream of IPipelineService.Count failed, and a client interceptor caught the exception without throwing one of its own.", failed.Message);
        Assert.Equal("stream store down", Assert.IsType<MuxRemoteException>(failed.InnerException).Message);
    }

    [Theory]
    [InlineData(TransportKind.InMemory)]
    [InlineData(TransportKind.Tcp)]
    public async Task AClientInterceptorThatReturnsWithoutAwaitingNext_TheCallerGetsTheCallsOutcome_WhenItReturnsBeforeTheCallCompletesOrAfter(TransportKind kind)
    {
        foreach (bool returnsAfterTheCall in new[] { false, true })
        {
            var server = new MuxServerOptions { EnableDetailedErrors = true };
            var client = new MuxClientOptions();
            client.Interceptors.Add(new AbandonsNextOf("IPipelineService.Hang", "IPipelineService.Fail", returnsAfterTheCall));
            await using PipelineHost host = await PipelineHost.StartAsync(kind, server, client);

            // Before, the caller got the call's result when the interceptor returned after the call
            // completed, an InvalidOperationException when it returned before, and the call's own
            // failure in neither case: the outcome hung on timing.
            Task<int> hang = host.Proxy.Hang();
            await Hosts.WaitUntilAsync(() => host.Service.Runs == 1, "the abandoned call to run");
            Task<int>[] during = [.. Enumerable.Range(0, 8).Select(i => host.Proxy.Add(i, 1).AsTask())];
            host.Service.Release();
            Assert.Equal(1, await hang.WaitAsync(TestHost.Patience));

            MuxRemoteException failed = await Assert.ThrowsAsync<MuxRemoteException>(() => host.Proxy.Fail("handler failed").WaitAsync(TestHost.Patience));
            Assert.Equal("handler failed", failed.Message);

            // The abandoned call's pooled state was its own until its answer was read, so the calls
            // made meanwhile and after it get their own answers.
            Task<int>[] after = [.. Enumerable.Range(0, 8).Select(i => host.Proxy.Add(i, 100).AsTask())];
            int[] answers = await Task.WhenAll(during.Concat(after)).WaitAsync(TestHost.Patience);
            Assert.Equal(Enumerable.Range(1, 8).Concat(Enumerable.Range(100, 8)), answers);
        }
    }

    [Theory]
    [InlineData(TransportKind.InMemory)]
    [InlineData(TransportKind.Tcp)]
    public async Task AClientInterceptorThatReturnsWithoutAwaitingAStreamsNext_TheCallerGetsTheStreamsOwnFailure(TransportKind kind)
    {
        var server = new MuxServerOptions();
        server.Interceptors.Add(new ThrowAfterNext(() => new MuxRemoteException(MuxStatusCode.Unavailable, "stream store down")));
        var client = new MuxClientOptions();
        client.Interceptors.Add(new AbandonsNextOf("IPipelineService.Count", "-", returnsAfterTheCall: false));
        await using PipelineHost host = await PipelineHost.StartAsync(kind, server, client);

        var items = new List<int>();
        MuxRemoteException failed = await Assert.ThrowsAsync<MuxRemoteException>(async () =>
        {
            await foreach (int item in host.Proxy.Count(2).WithCancellation(new CancellationTokenSource(TestHost.Patience).Token))
            {
                items.Add(item);
            }
        });

        // Before, an InvalidOperationException said an interceptor caught it: none could have, as
        // they had all returned before the stream ended (as for a call with a result).
        Assert.Equal([1, 2], items);
        Assert.Equal("stream store down", failed.Message);
    }

    [Theory]
    [InlineData(TransportKind.InMemory, false)]
    [InlineData(TransportKind.Tcp, false)]
    [InlineData(TransportKind.InMemory, true)]
    [InlineData(TransportKind.Tcp, true)]
    public async Task AnInterceptorThatCallsNextAfterItReturned_IsRefused_TheCallFailedAsNotMadeIsNotMadeLate(TransportKind kind, bool onTheServer)
    {
        var late = new KeepsNext();
        await using PipelineHost host = await StartWithAsync(kind, late, onTheServer);

        Exception failed = await Assert.ThrowsAnyAsync<Exception>(() => host.Proxy.Add(1, 2).AsTask().WaitAsync(TestHost.Patience));
        Assert.StartsWith("The call to IPipelineService.Add was not made", failed.Message, StringComparison.Ordinal);

        // Before, the kept next() made the call its caller was told was not made (on the server, with
        // a pooled call that could be another's by then).
        InvalidOperationException refused = Assert.Throws<InvalidOperationException>(() => { _ = late.Next!(); });
        Assert.Equal($"next() was called after the Mux interceptors ({typeof(KeepsNext).FullName}) had returned without it, so their call had already failed as not made; await next() before returning.", refused.Message);
        Assert.Equal(0, host.Service.Runs);
    }

    [Theory]
    [InlineData(TransportKind.InMemory, false)]
    [InlineData(TransportKind.Tcp, false)]
    [InlineData(TransportKind.InMemory, true)]
    [InlineData(TransportKind.Tcp, true)]
    public async Task AnInterceptorThatRefusesByThrowing_AndCallsNextLater_IsRefused_TheCallIsNotMadeLate(TransportKind kind, bool onTheServer)
    {
        var late = new KeepsNext(() => new MuxRemoteException(MuxStatusCode.PermissionDenied, "not allowed", null));
        await using PipelineHost host = await StartWithAsync(kind, late, onTheServer);

        MuxRemoteException refusedCall = await Assert.ThrowsAsync<MuxRemoteException>(() => host.Proxy.Add(1, 2).AsTask().WaitAsync(TestHost.Patience));
        Assert.Equal(MuxStatusCode.PermissionDenied, refusedCall.StatusCode);

        // Before, a refusal by throwing left the chain open: the kept next() made the call (on the
        // server, with a pooled call that could be another's by then).
        Assert.Throws<InvalidOperationException>(() => { _ = late.Next!(); });
        Assert.Equal(0, host.Service.Runs);
    }

    /// <summary>A host whose server (or client) runs <paramref name="interceptor"/>, with detailed errors.</summary>
    private static Task<PipelineHost> StartWithAsync(TransportKind kind, KeepsNext interceptor, bool onTheServer)
    {
        var server = new MuxServerOptions { EnableDetailedErrors = true };
        var client = new MuxClientOptions();
        if (onTheServer)
        {
            server.Interceptors.Add(interceptor);
        }
        else
        {
            client.Interceptors.Add(interceptor);
        }

        return PipelineHost.StartAsync(kind, server, client);
    }

    [Theory]
    [InlineData(TransportKind.InMemory)]
    [InlineData(TransportKind.Tcp)]
    public async Task AClientInterceptorThatAwaitsTheTaskOfNextTwice_GetsTheCallsOutcomeBothTimes(TransportKind kind)
    {
        var server = new MuxServerOptions { EnableDetailedErrors = true };
        var client = new MuxClientOptions();
        client.Interceptors.Add(new AwaitsNextTwice());
        await using PipelineHost host = await PipelineHost.StartAsync(kind, server, client);

        Assert.Equal(3, await host.Proxy.Add(1, 2).AsTask().WaitAsync(TestHost.Patience));
        MuxRemoteException failed = await Assert.ThrowsAsync<MuxRemoteException>(() => host.Proxy.Fail("handler failed").WaitAsync(TestHost.Patience));
        Assert.Equal("handler failed", failed.Message);
        Assert.Equal(6, await host.Proxy.Sum(Values(new ConcurrentQueue<string>(), 1, 2, 3)).WaitAsync(TestHost.Patience));
        Assert.Equal(3, host.Service.Runs);
    }

    [Theory]
    [InlineData(TransportKind.InMemory)]
    [InlineData(TransportKind.Tcp)]
    public async Task AServerInterceptorThatNeverCallsNext_FailsTheCall_WithoutRunningTheHandler(TransportKind kind)
    {
        var server = new MuxServerOptions { EnableDetailedErrors = true };
        server.Interceptors.Add(new Forgetful());
        await using PipelineHost host = await PipelineHost.StartAsync(kind, server);

        MuxRemoteException failed = await Assert.ThrowsAsync<MuxRemoteException>(() => host.Proxy.Add(1, 2).AsTask().WaitAsync(TestHost.Patience));

        Assert.Equal(MuxStatusCode.HandlerFailed, failed.StatusCode);
        Assert.Equal($"The call to IPipelineService.Add was not made: an interceptor ({typeof(Forgetful).FullName}) returned without calling next() and without throwing. A server interceptor refuses a call by throwing, for example MuxRemoteException(MuxStatusCode.PermissionDenied, \"...\").", failed.Message);
        Assert.Equal(0, host.Service.Runs);
    }

    [Theory]
    [InlineData(TransportKind.InMemory)]
    [InlineData(TransportKind.Tcp)]
    public async Task AClientInterceptorThatCallsNextTwice_FailsTheCall_AndTheServerRunsItOnce(TransportKind kind)
    {
        var client = new MuxClientOptions();
        client.Interceptors.Add(new Twice());
        await using PipelineHost host = await PipelineHost.StartAsync(kind, clientOptions: client);

        InvalidOperationException failed = await Assert.ThrowsAsync<InvalidOperationException>(() => host.Proxy.Add(1, 2).AsTask().WaitAsync(TestHost.Patience));

        Assert.Equal($"The Mux interceptor {typeof(Twice).FullName} called next() twice; it runs the rest of the call, so call it once.", failed.Message);
        Assert.Equal(1, host.Service.Runs);
    }

    [Theory]
    [InlineData(TransportKind.InMemory)]
    [InlineData(TransportKind.Tcp)]
    public async Task Interceptors_RunOnceAroundAWholeServerStream_OnBothSides(TransportKind kind)
    {
        var log = new ConcurrentQueue<string>();
        await using PipelineHost host = await StartWithOneLoggingInterceptorEachAsync(kind, log);

        var items = new List<int>();
        await foreach (int item in host.Proxy.Count(3).WithCancellation(new CancellationTokenSource(TestHost.Patience).Token))
        {
            items.Add(item);
            log.Enqueue($"caller read {item}");
        }

        Assert.Equal([1, 2, 3], items);
        string[] lines = log.ToArray();

        // Once each, around everything: the client's interceptor exits only after the caller's loop ended.
        Assert.Equal(1, lines.Count(l => l == "c enter IPipelineService.Count"));
        Assert.Equal(1, lines.Count(l => l == "s enter IPipelineService.Count"));
        Assert.Equal("c enter IPipelineService.Count", lines[0]);
        Assert.Equal("s enter IPipelineService.Count", lines[1]);
        Assert.Equal("handler Count", lines[2]);
        Assert.True(Array.IndexOf(lines, "s exit IPipelineService.Count") > Array.IndexOf(lines, "item 3"), string.Join(" | ", lines));
        Assert.Equal("c exit IPipelineService.Count", lines[^1]);
        Assert.True(Array.IndexOf(lines, "s exit IPipelineService.Count") < lines.Length - 1, string.Join(" | ", lines));
        Assert.True(Array.IndexOf(lines, "caller read 3") < lines.Length - 1, string.Join(" | ", lines));
    }

    [Theory]
    [InlineData(TransportKind.InMemory)]
    [InlineData(TransportKind.Tcp)]
    public async Task Interceptors_RunOnceAroundAWholeClientStream_OnBothSides(TransportKind kind)
    {
        var log = new ConcurrentQueue<string>();
        await using PipelineHost host = await StartWithOneLoggingInterceptorEachAsync(kind, log);

        Assert.Equal(6, await host.Proxy.Sum(Values(log, 1, 2, 3)).WaitAsync(TestHost.Patience));

        // Once each, around everything: the server's interceptor exits after the handler read the
        // last item (which it could only after the caller's producer made it), the client's after that.
        string[] lines = log.ToArray();
        Assert.Equal(1, lines.Count(l => l == "c enter IPipelineService.Sum"));
        Assert.Equal(1, lines.Count(l => l == "s enter IPipelineService.Sum"));
        Assert.Equal(1, lines.Count(l => l == "s exit IPipelineService.Sum"));
        Assert.Equal("c enter IPipelineService.Sum", lines[0]);
        Assert.True(Array.IndexOf(lines, "s enter IPipelineService.Sum") < Array.IndexOf(lines, "handler Sum"), string.Join(" | ", lines));
        Assert.True(Array.IndexOf(lines, "sent 3") < Array.IndexOf(lines, "s exit IPipelineService.Sum"), string.Join(" | ", lines));
        Assert.Equal(["s exit IPipelineService.Sum", "c exit IPipelineService.Sum"], lines[^2..]);
    }

    [Theory]
    [InlineData(TransportKind.InMemory)]
    [InlineData(TransportKind.Tcp)]
    public async Task AStreamThatFails_ReachesTheClientInterceptorsNext_AndTheCallerGetsWhatTheyMakeOfIt(TransportKind kind)
    {
        var client = new MuxClientOptions();
        client.Interceptors.Add(new Translate());
        var server = new MuxServerOptions();
        server.Interceptors.Add(new ThrowAfterNext(() => new MuxRemoteException(MuxStatusCode.Unavailable, "stream store down")));
        await using PipelineHost host = await PipelineHost.StartAsync(kind, server, client);

        var items = new List<int>();
        TimeoutException translated = await Assert.ThrowsAsync<TimeoutException>(async () =>
        {
            await foreach (int item in host.Proxy.Count(2).WithCancellation(new CancellationTokenSource(TestHost.Patience).Token))
            {
                items.Add(item);
            }
        });

        // The items went out before the server's interceptor threw; the end of the stream is its error.
        Assert.Equal([1, 2], items);
        Assert.Equal("translated: Unavailable stream store down", translated.Message);
    }

    // One logging interceptor on each side ("s" on the server, "c" on the client), both writing to
    // the log the handler and the test write to, so a test can read the order of everything.
    private static Task<PipelineHost> StartWithOneLoggingInterceptorEachAsync(TransportKind kind, ConcurrentQueue<string> log)
    {
        var server = new MuxServerOptions();
        server.Interceptors.Add(new LoggingServerInterceptor("s", log));
        var client = new MuxClientOptions();
        client.Interceptors.Add(new LoggingClientInterceptor("c", log));
        return PipelineHost.StartAsync(kind, server, client, log);
    }

    private static async IAsyncEnumerable<int> Values(ConcurrentQueue<string> log, params int[] values)
    {
        foreach (int value in values)
        {
            await Task.Yield();
            log.Enqueue($"sent {value}");
            yield return value;
        }
    }

    /// <summary>Returns without calling next() and without throwing.</summary>
    private sealed class Forgetful : IMuxServerInterceptor
    {
        public ValueTask InvokeAsync(MuxCallContext call, Func<ValueTask> next) => ValueTask.CompletedTask;
    }

    /// <summary>Catches whatever next() throws, and returns.</summary>
    private sealed class Swallow : IMuxClientInterceptor
    {
        public async ValueTask InvokeAsync(MuxClientCall call, Func<ValueTask> next)
        {
            try
            {
                await next();
            }
            catch (Exception)
            {
                // Dropped: the case under test.
            }
        }
    }

    /// <summary>Misuse: starts next() for calls to two methods and returns without awaiting it,
    /// at once or once the call has completed.</summary>
    private sealed class AbandonsNextOf(string method, string other, bool returnsAfterTheCall) : IMuxClientInterceptor
    {
        public async ValueTask InvokeAsync(MuxClientCall call, Func<ValueTask> next)
        {
            if (call.MethodName != method && call.MethodName != other)
            {
                await next();
                return;
            }

            ValueTask sent = next();
            if (returnsAfterTheCall)
            {
                await Hosts.WaitUntilAsync(() => sent.IsCompleted, "the abandoned call to complete");
            }
        }
    }

    /// <summary>Awaits the task of next() twice (a Task may be; a ValueTask from a pool may not).</summary>
    private sealed class AwaitsNextTwice : IMuxClientInterceptor
    {
        public async ValueTask InvokeAsync(MuxClientCall call, Func<ValueTask> next)
        {
            ValueTask sent = next();
            try
            {
                await sent;
            }
            catch (MuxRemoteException)
            {
            }

            await sent;
        }
    }

    /// <summary>Calls next() twice.</summary>
    private sealed class Twice : IMuxClientInterceptor
    {
        public async ValueTask InvokeAsync(MuxClientCall call, Func<ValueTask> next)
        {
            await next();
            await next();
        }
    }

    /// <summary>Turns a remote failure into a TimeoutException naming it (what an application's
    /// interceptor might do to map errors).</summary>
    private sealed class Translate : IMuxClientInterceptor
    {
        public async ValueTask InvokeAsync(MuxClientCall call, Func<ValueTask> next)
        {
            try
            {
                await next();
            }
            catch (MuxRemoteException ex)
            {
                throw new TimeoutException($"translated: {ex.StatusCode} {ex.Message}");
            }
        }
    }
}
