namespace Mux.Connection;

/// <summary>
/// One call's way through its interceptors, for either role (IncomingCall's server interceptors,
/// the client runtime's client interceptors): interceptor <c>i</c> gets a <c>next</c> that runs
/// interceptor <c>i + 1</c>, and the last one's runs the call itself (<see cref="InvokeCallAsync"/>).
/// Each <c>next</c> runs at most once. Made per call, and only when there are interceptors: a side
/// without any never allocates one.
/// </summary>
internal abstract class InterceptorChain
{
    private readonly int _count;

    // What became of the call itself: NotYet while the interceptors run, Invoked once the last next()
    // made it, Closed once the chain returned without making it. Set by the last next() and Close.
    private int _call;

    private const int NotYet = 0;
    private const int Invoked = 1;
    private const int Closed = 2;

    protected InterceptorChain(int count) => _count = count;

    /// <summary>Whether the last interceptor's next() ran the call itself; read after
    /// <see cref="Close"/>.</summary>
    public bool CallInvoked => Volatile.Read(ref _call) == Invoked;

    /// <summary>
    /// Closes the chain once it has returned, whether it returned or threw (a refusal). A next() an
    /// interceptor kept and calls after this throws: its call already failed as not made, and its
    /// pooled state (the server's) may be another call's by then.
    /// </summary>
    public void Close() => Interlocked.CompareExchange(ref _call, Closed, NotYet);

    /// <summary>Runs interceptor <paramref name="index"/> (and, through its next(), the rest).</summary>
    public ValueTask InvokeAsync(int index = 0)
    {
        // The last interceptor's next() is the chain's own: the call's state already says whether
        // it ran, so it needs no Next of its own (one object less per call, the only one with a
        // single interceptor).
        return InvokeInterceptorAsync(index, index + 1 == _count ? InvokeCall : new Next(this, index + 1).Invoke);
    }

    /// <summary>The last interceptor's next(): makes the call, once, unless the chain has closed.</summary>
    private ValueTask InvokeCall()
    {
        switch (Interlocked.CompareExchange(ref _call, Invoked, NotYet))
        {
            case Invoked:
                throw CalledTwice(_count - 1);
            case Closed:
                throw CalledAfterClose();
        }

        return InvokeCallAsync();
    }

    private InvalidOperationException CalledTwice(int index) =>
        new($"The Mux interceptor {DescribeInterceptor(index)} called next() twice; it runs the rest of the call, so call it once.");

    private InvalidOperationException CalledAfterClose() =>
        new($"next() was called after the Mux interceptors ({Names()}) had returned without it, so their call had already failed as not made; await next() before returning.");

    /// <summary>Calls interceptor <paramref name="index"/> with <paramref name="next"/>.</summary>
    protected abstract ValueTask InvokeInterceptorAsync(int index, Func<ValueTask> next);

    /// <summary>The call itself: the handler (server), or the call sent (client).</summary>
    protected abstract ValueTask InvokeCallAsync();

    /// <summary>The type name of interceptor <paramref name="index"/>, for messages.</summary>
    protected abstract string DescribeInterceptor(int index);

    /// <summary>Why the call cannot end well after the chain returned without reaching it.</summary>
    public InvalidOperationException NotInvoked(string methodName, string refusal)
    {
        return new InvalidOperationException($"The call to {methodName} was not made: an interceptor ({Names()}) returned without calling next() and without throwing. {refusal}");
    }

    /// <summary>The interceptors' type names, for messages.</summary>
    private string Names() => string.Join(", ", Enumerable.Range(0, _count).Select(DescribeInterceptor));

    /// <summary>The next() an interceptor other than the last is given: runs the rest of the
    /// chain, once.</summary>
    private sealed class Next(InterceptorChain chain, int index)
    {
        // 1 once called. Set by the interceptor's thread of the moment.
        private int _called;

        public ValueTask Invoke()
        {
            if (Interlocked.Exchange(ref _called, 1) != 0)
            {
                throw chain.CalledTwice(index - 1);
            }

            // Refused here, not only by the last next(): the interceptors inside would otherwise
            // run for a call that is over.
            return Volatile.Read(ref chain._call) == Closed ? throw chain.CalledAfterClose() : chain.InvokeAsync(index);
        }
    }
}
