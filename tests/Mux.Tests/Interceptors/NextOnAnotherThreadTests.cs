using Mux.Server;
using Mux.Tests.Infrastructure;

namespace Mux.Tests.Interceptors;

/// <summary>
/// An interceptor runs next() on another thread and returns while the call is still in its
/// synchronous part (the handler on the server, the send on the client). The last next() has made
/// the call by then, so the call waits for it, whatever became of the task of next(): the caller
/// gets the call's own answer, and on the server no other call runs in its place. Each order is
/// forced with gates (the handler's own, the client clock's), never with timing; the interceptor
/// returns on the test's thread, so whatever its return sets off has run when the test goes on.
/// </summary>
public sealed class NextOnAnotherThreadTests
{
    [Theory]
    [InlineData(false)]
    [InlineData(true)]
    public async Task AServerInterceptorThatReturnsWhileTheHandlerIsInItsSynchronousPart_TheCallWaitsForTheHandler_AndTheNextCallsGetTheirOwnAnswers(bool handlerWaitsAgain)
    {
        var interceptor = new RunsNextOnAnotherThread("IHeldService.Held", clock: null);
        var server = new MuxServerOptions { MaxConcurrentCallsPerConnection = 1, EnableDetailedErrors = true };
        server.Interceptors.Add(interceptor);
        await using HeldHost host = await HeldHost.StartAsync(server, new MuxClientOptions { CallTimeout = TestHost.Patience });
        ServerConnection connection = host.Server.Connections.Single();

        // Call 1's handler starts on the interceptor's thread and stops in its synchronous part.
        Task<int> first = host.Proxy.Held(42, handlerWaitsAgain);
        await host.Service.HeldEntered.Task.WaitAsync(TestHost.Patience);
        uint firstId = connection.Incoming.HighestReceivedCallId;
        interceptor.Return();

        // Calls 2 and 3 wait for call 1's slot (the connection runs one call at a time). Before, the
        // server had answered call 1 already (HandlerFailed), and freed its slot and its pooled call
        // object, which call 2 then took while call 1's handler still ran: wait for either.
        Task<int> second = host.Proxy.Slow(2);
        Task<int> third = host.Proxy.Echo(3);
        await Hosts.WaitUntilAsync(
            () => host.Service.SlowEntered || (connection.Incoming.Count == 1 && connection.Incoming.HighestReceivedCallId == firstId),
            "call 2's handler to run, or the server to hold call 1 and no later call");
        bool answeredEarly = first.IsCompleted;

        // Call 1's handler leaves its synchronous part (the last next() returns), then call 2's goes on.
        host.Service.ReleaseHeld();
        await interceptor.NextReturned.WaitAsync(TestHost.Patience);
        host.Service.ReleaseSlow();

        string[] outcomes = await Task.WhenAll(OutcomeAsync(first), OutcomeAsync(second), OutcomeAsync(third));
        AssertOutcomes(
            ["call 1: 42", "call 2: 2", "call 3: 3", "call 1 answered before its handler returned: False", "most handlers at once: 1"],
            [.. outcomes.Select((outcome, i) => $"call {i + 1}: {outcome}"), $"call 1 answered before its handler returned: {answeredEarly}", $"most handlers at once: {host.Service.MostAtOnce}"]);

        // No slot was lost: the next call is answered too, and the server then holds no call.
        Assert.Equal(4, await host.Proxy.Echo(4).WaitAsync(TestHost.Patience));
        await Hosts.WaitUntilAsync(() => connection.Incoming.Count == 0, "the server to hold no call");
    }

    [Fact]
    public async Task AClientInterceptorThatReturnsWhileTheCallIsInItsSynchronousPart_TheCallerGetsTheCallsAnswer()
    {
        var clock = new HoldingClock();
        var interceptor = new RunsNextOnAnotherThread("IHeldService.Echo", clock);
        var client = new MuxClientOptions { TimeProvider = clock, CallTimeout = TestHost.Patience };
        client.Interceptors.Add(interceptor);
        await using HeldHost host = await HeldHost.StartAsync(new MuxServerOptions { MaxConcurrentCallsPerConnection = 1, EnableDetailedErrors = true }, client, clock);

        // The last next() stops inside the call, before its Request is written, while the
        // interceptor returns.
        Task<int> call = host.Proxy.Echo(5);
        await clock.Holding.Task.WaitAsync(TestHost.Patience);
        interceptor.Return();
        bool endedEarly = call.IsCompleted;
        clock.Release();

        // Before, the caller got a bare "Operation is not valid due to the current state of the
        // object" while the call went on to the server, which ran it.
        AssertOutcomes(
            ["5", "ended before the call: False", "runs: 1"],
            [await OutcomeAsync(call), $"ended before the call: {endedEarly}", $"runs: {host.Service.EchoRuns}"]);
        Assert.Equal(6, await host.Proxy.Echo(6).WaitAsync(TestHost.Patience));
        Assert.Equal((1, 0), host.Client.Connection.Outgoing.SlotAccount);
    }

    [Fact]
    public async Task AClientInterceptorThatReturnsBeforeItsNextHasStartedTheStream_TheCallerReadsTheStream()
    {
        var clock = new HoldingClock();
        var interceptor = new RunsNextOnAnotherThread("IHeldService.Count", clock);
        var client = new MuxClientOptions { TimeProvider = clock, CallTimeout = TestHost.Patience };
        client.Interceptors.Add(interceptor);
        await using HeldHost host = await HeldHost.StartAsync(new MuxServerOptions { EnableDetailedErrors = true }, client, clock);

        Task<List<int>> reading = Task.Run(async () =>
        {
            var items = new List<int>();
            await foreach (int item in host.Proxy.Count(3).WithCancellation(new CancellationTokenSource(TestHost.Patience).Token))
            {
                items.Add(item);
            }

            return items;
        });

        // The last next() stops after it has marked the call made, before it has started the stream.
        await clock.Holding.Task.WaitAsync(TestHost.Patience);
        interceptor.Return();
        clock.Release();

        // Before, the interceptors' end found no stream yet and ended the call as not made: the
        // caller read "The call to IHeldService.Count was not made: an interceptor (...) returned
        // without calling next()", and the stream next() started afterwards was never read.
        Assert.Equal([1, 2, 3], await reading.WaitAsync(TestHost.Patience));
        Assert.Equal(1, host.Service.CountRuns);
    }

    /// <summary>Compares what became of the calls with what should have, showing all of both.</summary>
    private static void AssertOutcomes(string[] expected, string[] actual) =>
        Assert.True(expected.SequenceEqual(actual), $"Expected: {string.Join(" | ", expected)}{Environment.NewLine}Actual:   {string.Join(" | ", actual)}");

    /// <summary>What became of a call: its value, or its failure (status and message for one the
    /// server sent), within the patience of a test.</summary>
    private static async Task<string> OutcomeAsync(Task<int> call)
    {
        try
        {
            return (await call.WaitAsync(TestHost.Patience + TestHost.Patience)).ToString(System.Globalization.CultureInfo.InvariantCulture);
        }
        catch (MuxRemoteException ex)
        {
            return $"{ex.StatusCode} '{ex.Message}'";
        }
        catch (Exception ex)
        {
            return $"{ex.GetType().Name}: {ex.Message}";
        }
    }

    /// <summary>
    /// Misuse: for the first call to <paramref name="method"/>, runs next() on another thread
    /// (under <paramref name="clock"/>'s hold, when given) and returns when the test says, on the
    /// test's thread; awaits next() for every other call.
    /// </summary>
    private sealed class RunsNextOnAnotherThread(string method, HoldingClock? clock) : IMuxServerInterceptor, IMuxClientInterceptor
    {
        // Completed by Return, on the test's thread, which then runs what follows the interceptor's return.
        private readonly TaskCompletionSource _return = new();
        private readonly TaskCompletionSource _nextReturned = new(TaskCreationOptions.RunContinuationsAsynchronously);
        private int _used;

        /// <summary>Completes once the next() run on another thread has returned.</summary>
        public Task NextReturned => _nextReturned.Task;

        public void Return() => _return.TrySetResult();

        public ValueTask InvokeAsync(MuxCallContext call, Func<ValueTask> next) => Invoke(call.MethodName, next);

        public ValueTask InvokeAsync(MuxClientCall call, Func<ValueTask> next) => Invoke(call.MethodName, next);

        private ValueTask Invoke(string methodName, Func<ValueTask> next)
        {
            if (methodName != method || Interlocked.Exchange(ref _used, 1) != 0)
            {
                return next();
            }

            _ = Task.Run(() =>
            {
                clock?.HoldHere();
                _ = next();
                _nextReturned.TrySetResult();
            });
            return new ValueTask(_return.Task);
        }
    }
}

/// <summary>
/// A clock that stops the first flow that asked (<see cref="HoldHere"/>) where it first reads
/// the timestamp frequency, which a client call does inside its last next(), once it is marked
/// made: the send of a call with a result, before its Request is written, and the start of a
/// stream, before next() has it. The system's clock otherwise.
/// </summary>
internal sealed class HoldingClock : TimeProvider, IDisposable
{
    private readonly AsyncLocal<bool> _here = new();
    private readonly SemaphoreSlim _release = new(0);
    private int _armed = 1;

    /// <summary>Completes when a flow is held.</summary>
    public TaskCompletionSource Holding { get; } = new(TaskCreationOptions.RunContinuationsAsynchronously);

    public override long TimestampFrequency
    {
        get
        {
            if (_here.Value && Interlocked.Exchange(ref _armed, 0) == 1)
            {
                Holding.TrySetResult();
                _release.Wait(TestHost.Patience);
            }

            return base.TimestampFrequency;
        }
    }

    /// <summary>Holds this flow at its next read of the frequency (once per clock).</summary>
    public void HoldHere() => _here.Value = true;

    public void Release() => _release.Release();

    public void Dispose() => _release.Dispose();
}

/// <summary>A server serving <see cref="IHeldService"/> in memory, and its client.</summary>
internal sealed class HeldHost(MuxServer server, MuxClient client, HeldService service, HoldingClock? clock) : IAsyncDisposable
{
    public MuxServer Server => server;

    public MuxClient Client => client;

    public HeldService Service => service;

    public IHeldService Proxy { get; } = client.CreateProxy<IHeldService>();

    public static async Task<HeldHost> StartAsync(MuxServerOptions serverOptions, MuxClientOptions clientOptions, HoldingClock? clock = null)
    {
        var service = new HeldService();
        var server = new MuxServer(serverOptions);
        server.AddService<IHeldService>(service);
        MuxClient client = await server.ConnectInMemoryAsync(clientOptions).WaitAsync(TestHost.Patience);
        return new HeldHost(server, client, service, clock);
    }

    public async ValueTask DisposeAsync()
    {
        service.ReleaseHeld();
        service.ReleaseSlow();
        clock?.Release();
        await client.DisposeAsync().AsTask().WaitAsync(TestHost.Patience);
        await server.DisposeAsync().AsTask().WaitAsync(TestHost.Patience + TestHost.Patience);
        clock?.Dispose();
        service.Dispose();
    }
}

/// <summary>Handlers that the test holds, and that count how many of them run at once.</summary>
[MuxService]
public interface IHeldService
{
    /// <summary>Stops in its synchronous part until the test releases it, then returns
    /// <paramref name="value"/>: at once, or after waiting (asynchronously) once more.</summary>
    Task<int> Held(int value, bool waitsAgain);

    /// <summary>Waits (asynchronously) until the test releases it, then returns <paramref name="value"/>.</summary>
    Task<int> Slow(int value);

    Task<int> Echo(int value);

    /// <summary>Streams 1..<paramref name="count"/>.</summary>
    IAsyncEnumerable<int> Count(int count);
}

/// <summary>The server side of <see cref="IHeldService"/>.</summary>
public sealed class HeldService : IHeldService, IDisposable
{
    private readonly SemaphoreSlim _held = new(0);
    private readonly TaskCompletionSource _slow = new(TaskCreationOptions.RunContinuationsAsynchronously);
    private int _running;
    private int _mostAtOnce;
    private int _echoRuns;
    private int _countRuns;
    private volatile bool _slowEntered;

    /// <summary>Completes when a Held handler has started.</summary>
    public TaskCompletionSource HeldEntered { get; } = new(TaskCreationOptions.RunContinuationsAsynchronously);

    /// <summary>Whether a Slow handler has started.</summary>
    public bool SlowEntered => _slowEntered;

    /// <summary>The most handlers that ran at the same time.</summary>
    public int MostAtOnce => Volatile.Read(ref _mostAtOnce);

    public int EchoRuns => Volatile.Read(ref _echoRuns);

    public int CountRuns => Volatile.Read(ref _countRuns);

    public void ReleaseHeld() => _held.Release();

    public void ReleaseSlow() => _slow.TrySetResult();

    public async Task<int> Held(int value, bool waitsAgain)
    {
        Enter();
        HeldEntered.TrySetResult();
        _held.Wait(TestHost.Patience);
        if (waitsAgain)
        {
            await Task.Yield();
        }

        Leave();
        return value;
    }

    public async Task<int> Slow(int value)
    {
        Enter();
        _slowEntered = true;
        await _slow.Task;
        Leave();
        return value;
    }

    public Task<int> Echo(int value)
    {
        Enter();
        Interlocked.Increment(ref _echoRuns);
        Leave();
        return Task.FromResult(value);
    }

    public async IAsyncEnumerable<int> Count(int count)
    {
        Interlocked.Increment(ref _countRuns);
        for (int i = 1; i <= count; i++)
        {
            await Task.Yield();
            yield return i;
        }
    }

    public void Dispose() => _held.Dispose();

    private void Enter()
    {
        int now = Interlocked.Increment(ref _running);
        int most = Volatile.Read(ref _mostAtOnce);
        while (now > most)
        {
            int seen = Interlocked.CompareExchange(ref _mostAtOnce, now, most);
            if (seen == most)
            {
                break;
            }

            most = seen;
        }
    }

    private void Leave() => Interlocked.Decrement(ref _running);
}
