namespace Mux.Connection;

/// <summary>One call's way through its interceptors, for either role: interceptor <c>i</c> gets a <c>next</c> that runs interceptor <c>i + 1</c>,
/// and the last one's runs the call itself. Each <c>next</c> runs at most once. Made per call, and only when there are interceptors.</summary>
internal abstract class InterceptorChain
{
    // The last next() has marked the call made and is inside it: InvokeCallAsync has not returned.
    private static readonly object s_entered = new();

    // InvokeCallAsync has returned: the role has recorded the call's own task (see WhenCallReturned).
    private static readonly object s_returned = new();

    // The chain returned (or threw) without making the call.
    private static readonly object s_closed = new();

    // Null while the interceptors run, then s_entered, s_returned or s_closed, or the chain's-end waiter in place of s_entered.
    // Changed only by compare-and-swap or exchange: by the last next() (on any thread), Close and WhenCallReturned.
    private object? _call;

    protected abstract int Count { get; }

    /// <summary>Whether the last interceptor's next() made the call; read after <see cref="Close"/>.</summary>
    public bool CallInvoked => Volatile.Read(ref _call) is { } state && state != s_closed;

    /// <summary>Closes the chain once it has returned or thrown. A next() an interceptor kept and calls after this throws: its
    /// call already failed as not made, and its pooled state (the server's) may be another call's by then.</summary>
    public void Close() => Interlocked.CompareExchange(ref _call, s_closed, null);

    /// <summary>After <see cref="Close"/>: completes once the last next(), if it made the call, has returned, so the call's
    /// task, recorded before that return, can be read: an interceptor that returned without awaiting next(), still running on
    /// another thread, cannot end the call before it. Allocates only when the chain ended inside that window.</summary>
    public ValueTask WhenCallReturned()
    {
        if (Volatile.Read(ref _call) != s_entered)
        {
            return default;
        }

        var waiter = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        return Interlocked.CompareExchange(ref _call, waiter, s_entered) == s_entered ? new ValueTask(waiter.Task) : default;
    }

    // The last next() is the chain's own, as the call's state says whether it ran: one object less per call.
    public ValueTask InvokeAsync(int index = 0) =>
        InvokeInterceptorAsync(index, index + 1 == Count ? InvokeCall : new Next(this, index + 1).Invoke);

    /// <summary>The last interceptor's next(): makes the call, once, unless the chain has closed.</summary>
    private ValueTask InvokeCall()
    {
        // Marked before the call starts: a chain that ends from here on waits for the return below.
        object? before = Interlocked.CompareExchange(ref _call, s_entered, null);
        if (before is not null)
        {
            throw before == s_closed ? CalledAfterClose() : CalledTwice(Count - 1);
        }

        try
        {
            return InvokeCallAsync();
        }
        finally
        {
            // The call's task is recorded by now: a chain's end waiting for this may read it.
            (Interlocked.Exchange(ref _call, s_returned) as TaskCompletionSource)?.SetResult();
        }
    }

    private InvalidOperationException CalledTwice(int index) =>
        new($"The Mux interceptor {DescribeInterceptor(index)} called next() twice; it runs the rest of the call, so call it once.");

    private InvalidOperationException CalledAfterClose() =>
        new($"next() was called after the Mux interceptors ({Names()}) had returned without it, so their call had already failed " +
            "as not made; await next() before returning.");

    protected abstract ValueTask InvokeInterceptorAsync(int index, Func<ValueTask> next);

    /// <summary>The call itself: the handler (server), or the call sent (client).</summary>
    protected abstract ValueTask InvokeCallAsync();

    protected abstract string DescribeInterceptor(int index);

    public InvalidOperationException NotInvoked(string methodName, string refusal) => new(
        $"The call to {methodName} was not made: an interceptor ({Names()}) returned without calling next() and without throwing. {refusal}");

    private string Names() => string.Join(", ", Enumerable.Range(0, Count).Select(DescribeInterceptor));

    /// <summary>The next() of an interceptor other than the last: runs the rest of the chain, once.</summary>
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

            // Refused here, not only by the last next(): the interceptors inside would otherwise run for a call that is over.
            return Volatile.Read(ref chain._call) == s_closed ? throw chain.CalledAfterClose() : chain.InvokeAsync(index);
        }
    }
}
