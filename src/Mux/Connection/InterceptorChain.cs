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

    // 1 once next() reached the call itself. Set by the last next(); read once the chain has returned.
    private int _callInvoked;

    protected InterceptorChain(int count) => _count = count;

    /// <summary>Whether the last interceptor's next() ran the call itself.</summary>
    public bool CallInvoked => Volatile.Read(ref _callInvoked) != 0;

    /// <summary>Runs interceptor <paramref name="index"/> (and, through its next(), the rest).</summary>
    public ValueTask InvokeAsync(int index = 0)
    {
        if (index < _count)
        {
            return InvokeInterceptorAsync(index, new Next(this, index + 1).Invoke);
        }

        Volatile.Write(ref _callInvoked, 1);
        return InvokeCallAsync();
    }

    /// <summary>Calls interceptor <paramref name="index"/> with <paramref name="next"/>.</summary>
    protected abstract ValueTask InvokeInterceptorAsync(int index, Func<ValueTask> next);

    /// <summary>The call itself: the handler (server), or the call sent (client).</summary>
    protected abstract ValueTask InvokeCallAsync();

    /// <summary>The type name of interceptor <paramref name="index"/>, for messages.</summary>
    protected abstract string DescribeInterceptor(int index);

    /// <summary>Why the call cannot end well after the chain returned without reaching it.</summary>
    public InvalidOperationException NotInvoked(string methodName, string refusal)
    {
        IEnumerable<string> names = Enumerable.Range(0, _count).Select(DescribeInterceptor);
        return new InvalidOperationException($"The call to {methodName} was not made: an interceptor ({string.Join(", ", names)}) returned without calling next() and without throwing. {refusal}");
    }

    /// <summary>The next() an interceptor is given: runs the rest of the chain, once.</summary>
    private sealed class Next(InterceptorChain chain, int index)
    {
        // 1 once called. Set by the interceptor's thread of the moment.
        private int _called;

        public ValueTask Invoke()
        {
            if (Interlocked.Exchange(ref _called, 1) != 0)
            {
                throw new InvalidOperationException($"The Mux interceptor {chain.DescribeInterceptor(index - 1)} called next() twice; it runs the rest of the call, so call it once.");
            }

            return chain.InvokeAsync(index);
        }
    }
}
