using BenchmarkDotNet.Attributes;
using Mux.Samples.Contracts;

namespace Mux.Benchmarks;

/// <summary>
/// What the call pipeline (issue 25) costs per call: the same Add call over in-memory pipes as
/// <see cref="CallBenchmarks.Add"/>, without interceptors (the baseline), and through one client
/// interceptor and one server interceptor that only <c>await next()</c>, as the load runner's
/// <c>--interceptors</c> does. "Allocated" is client and server together (see
/// <see cref="CallBenchmarks"/>); it includes the interceptors' own async state machines, which are
/// the user's code, not Mux's.
/// </summary>
[MemoryDiagnoser]
[Config(typeof(MuxJobConfig))]
public class InterceptorBenchmarks
{
    private InMemoryConnection _plain = null!;
    private InMemoryConnection _intercepted = null!;
    private IUserService _plainProxy = null!;
    private IUserService _interceptedProxy = null!;

    [GlobalSetup]
    public void Setup()
    {
        var interceptor = new PassThrough();
        _plain = InMemoryConnection.StartAsync().GetAwaiter().GetResult();
        _intercepted = InMemoryConnection.StartAsync([interceptor], [interceptor]).GetAwaiter().GetResult();
        _plainProxy = _plain.Proxy;
        _interceptedProxy = _intercepted.Proxy;
        if (_interceptedProxy.Add(1, 2).AsTask().GetAwaiter().GetResult() != 3 || interceptor.Calls != 2)
        {
            throw new InvalidOperationException("The intercepted in-memory connection does not answer through its interceptors.");
        }
    }

    [GlobalCleanup]
    public void Cleanup()
    {
        _intercepted.DisposeAsync().AsTask().GetAwaiter().GetResult();
        _plain.DisposeAsync().AsTask().GetAwaiter().GetResult();
    }

    /// <summary>No interceptor on either side.</summary>
    [Benchmark(Baseline = true)]
    public ValueTask<int> Add() => _plainProxy.Add(1, 2);

    /// <summary>One client interceptor and one server interceptor, each only awaiting next().</summary>
    [Benchmark]
    public ValueTask<int> AddIntercepted() => _interceptedProxy.Add(1, 2);

    /// <summary>Awaits next() and nothing else; counts its calls only until the setup has checked
    /// that it runs, so the measured calls pay nothing for the count.</summary>
    private sealed class PassThrough : IMuxServerInterceptor, IMuxClientInterceptor
    {
        private int _calls;

        public int Calls => Volatile.Read(ref _calls);

        public async ValueTask InvokeAsync(MuxCallContext call, Func<ValueTask> next)
        {
            Count();
            await next();
        }

        public async ValueTask InvokeAsync(MuxClientCall call, Func<ValueTask> next)
        {
            Count();
            await next();
        }

        private void Count()
        {
            if (_calls < 2)
            {
                Interlocked.Increment(ref _calls);
            }
        }
    }
}
