using System.Runtime.CompilerServices;
using System.Runtime.ExceptionServices;
using System.Threading.Tasks.Sources;
using Mux.Connection;
using Mux.Streaming;

namespace Mux.Client;

// Calls through the client's interceptors (MuxClientOptions.Interceptors). A client without any
// never comes here: its calls go straight to ClientRuntime.Calls.cs.
internal sealed partial class ClientRuntime
{
    /// <summary>Calls a method that returns a stream (callee or duplex streaming), through the
    /// interceptors when the client has any.</summary>
    public IAsyncEnumerable<TResult> ReceiveStream<TArguments, TItem, TResult>(uint methodId, TArguments arguments, IAsyncEnumerable<TItem>? items, CallSettings? settings, CancellationToken cancellationToken)
        where TArguments : struct =>
        _interceptors.Length != 0
            ? InterceptStreamAsync<TArguments, TItem, TResult>(methodId, arguments, items, settings, cancellationToken)
            : OutgoingStreamCall.ReceiveAsync<TArguments, TItem, TResult>(SourceFor(settings), methodId, arguments, items, settings?.EncodedMetadata, cancellationToken);

    /// <summary>Calls a method that takes a stream and returns one value (caller streaming).</summary>
    public ValueTask<TResult> SendStreamAsync<TArguments, TItem, TResult>(uint methodId, TArguments arguments, IAsyncEnumerable<TItem> items, CallSettings? settings, CancellationToken cancellationToken)
        where TArguments : struct
    {
        if (_interceptors.Length == 0)
        {
            return OutgoingStreamCall.SendAsync<TArguments, TItem, TResult>(SourceFor(settings), methodId, arguments, items, settings?.EncodedMetadata, cancellationToken);
        }

        return new ClientStreamChain<TArguments, TItem, TResult>(this, NewCall(methodId, settings, cancellationToken), methodId, arguments, items, settings).RunAsync();
    }

    /// <summary>A unary call through the interceptors; its deadline is fixed once they let it go,
    /// from when it was made (see CallDeadline.Fix).</summary>
    private ValueTask<TResult> InterceptAsync<TArguments, TResult>(uint methodId, in TArguments arguments, CallSettings? settings, CancellationToken cancellationToken)
        where TArguments : struct =>
        new UnaryChain<TArguments, TResult>(this, NewCall(methodId, settings, cancellationToken), methodId, arguments, settings).RunAsync();

    /// <summary>What the interceptors of one call see, starting from the bound proxy's settings.</summary>
    private MuxClientCall NewCall(uint methodId, CallSettings? settings, CancellationToken cancellationToken) =>
        new(MuxServiceRegistry.GetMethodDisplayName(methodId), settings?.Metadata ?? [], settings?.Timeout ?? _callTimeoutSpan, cancellationToken);

    /// <summary>
    /// A streaming call through the interceptors, run once around the whole call: the last
    /// interceptor's next() starts the stream and completes when the caller's enumeration has ended
    /// (throwing what it failed with); the caller sees what the interceptors made of it at the end.
    /// </summary>
    private async IAsyncEnumerable<TResult> InterceptStreamAsync<TArguments, TItem, TResult>(uint methodId, TArguments arguments, IAsyncEnumerable<TItem>? items, CallSettings? settings, [EnumeratorCancellation] CancellationToken cancellationToken)
        where TArguments : struct
    {
        var chain = new ReceiveStreamChain<TArguments, TItem, TResult>(this, NewCall(methodId, settings, cancellationToken), methodId, arguments, items, settings);
        Task interceptors = chain.RunAsync();
        IAsyncEnumerator<TResult>? stream = await chain.Started.ConfigureAwait(false);
        if (stream is null)
        {
            await interceptors.ConfigureAwait(false); // An interceptor threw before next(): that is the caller's exception.
            throw chain.NotInvoked();
        }

        Exception? failure = null;
        bool returnedEarly;
        try
        {
            while (true)
            {
                bool more;
                try
                {
                    more = await stream.MoveNextAsync().ConfigureAwait(false);
                }
                catch (Exception ex)
                {
                    failure = ex; // next() throws it, in the interceptors, which decide what the caller gets.
                    break;
                }

                if (!more)
                {
                    break;
                }

                yield return stream.Current;
            }
        }
        finally
        {
            await stream.DisposeAsync().ConfigureAwait(false);

            // next() lasts until End: interceptors that returned already did not await it, and none
            // of them can take the stream's failure, which stays the caller's.
            returnedEarly = interceptors.IsCompleted;
            chain.End(failure);
            await interceptors.ConfigureAwait(false);
        }

        if (failure is not null)
        {
            if (returnedEarly)
            {
                ExceptionDispatchInfo.Throw(failure);
            }

            // As for a call with a result: a stream cut off by a failure does not end as if complete.
            throw new InvalidOperationException($"The stream of {chain.Call.MethodName} failed, and a client interceptor caught the exception without throwing one of its own.", failure);
        }
    }

    /// <summary>The interceptors of one call whose answer is a value: the last next() sends it, and
    /// returns a task of the call that this chain is the source of.</summary>
    private abstract class ValueChain<TResult>(ClientRuntime runtime, MuxClientCall call, uint methodId, CallSettings? settings)
        : CallChain(runtime, call, methodId, settings), IValueTaskSource
    {
        // The call's result, and whether it has one: a call that failed has none, and neither has
        // one still running. Written by the call's completion; read after the chain.
        private TResult? _result;
        private bool _hasResult;

        // The task of the last next(), completed with the call; reset never, as a chain is one call's.
        private ManualResetValueTaskSourceCore<bool> _sent;

        // The call's completion, while it runs; default when it completed at once. An interceptor
        // that returns without awaiting next() leaves it running: the caller waits for it here.
        // Awaited exactly once (by RunAsync, whatever the interceptors did with next()), so its
        // state machine, from a pool, goes back to it. Set by the last next(), on whatever thread
        // it runs, and read only once that next() has returned (WhenCallReturned).
        private ValueTask _running;

        // Whether an interceptor took the call's outcome from the task of next(): a failure it did
        // not rethrow was caught, where one nobody took is still the caller's.
        private bool _taken;

        [AsyncMethodBuilder(typeof(PoolingAsyncValueTaskMethodBuilder<>))]
        public async ValueTask<TResult> RunAsync()
        {
            try
            {
                await InvokeAsync().ConfigureAwait(false);
            }
            finally
            {
                Close(); // See InterceptorChain.Close: a next() kept past here is refused.
            }

            // An interceptor that returned without awaiting next() left the call running (next()
            // run on another thread may even be in its synchronous part still): it is still the
            // caller's, so its outcome is theirs too, whenever it comes, and nothing of it outlives
            // their await. Awaited when complete too: see _running.
            await WhenCallReturned().ConfigureAwait(false);
            await _running.ConfigureAwait(false);

            if (!_hasResult)
            {
                if (!CallInvoked)
                {
                    throw NotInvoked();
                }

                try
                {
                    _sent.GetResult(_sent.Version); // Throws the call's failure.
                }
                catch (Exception failure) when (Volatile.Read(ref _taken))
                {
                    // As on the server: the caller is not handed a default(TResult) nobody sent.
                    throw new InvalidOperationException($"The call to {Call.MethodName} has no result to return: it failed, and a client interceptor caught the exception without throwing one of its own.", failure);
                }
            }

            return _result!;
        }

        protected abstract ValueTask<TResult> SendAsync();

        protected override ValueTask InvokeCallAsync()
        {
            ValueTask<TResult> sent;
            try
            {
                sent = SendAsync();
            }
            catch (Exception ex)
            {
                sent = ValueTask.FromException<TResult>(ex); // Still the call's failure, not the chain's.
            }

            if (sent.IsCompletedSuccessfully)
            {
                _result = sent.Result;
                _hasResult = true;
                return default;
            }

            _running = AwaitAsync(sent);
            return new ValueTask(this, _sent.Version);
        }

        [AsyncMethodBuilder(typeof(PoolingAsyncValueTaskMethodBuilder))]
        private async ValueTask AwaitAsync(ValueTask<TResult> sent)
        {
            try
            {
                _result = await sent.ConfigureAwait(false);
                _hasResult = true;
            }
            catch (Exception ex)
            {
                _sent.SetException(ex);
                return;
            }

            _sent.SetResult(true);
        }

        ValueTaskSourceStatus IValueTaskSource.GetStatus(short token) => _sent.GetStatus(token);

        void IValueTaskSource.OnCompleted(Action<object?> continuation, object? state, short token, ValueTaskSourceOnCompletedFlags flags) =>
            _sent.OnCompleted(continuation, state, token, flags);

        void IValueTaskSource.GetResult(short token)
        {
            Volatile.Write(ref _taken, true);
            _sent.GetResult(token);
        }
    }

    /// <summary>A call with arguments and one answer.</summary>
    private sealed class UnaryChain<TArguments, TResult>(ClientRuntime runtime, MuxClientCall call, uint methodId, TArguments arguments, CallSettings? settings)
        : ValueChain<TResult>(runtime, call, methodId, settings)
        where TArguments : struct
    {
        // When the user made the call: its deadline counts from here. Only a unary call has one.
        private readonly long _madeAt = runtime._clock.GetTimestamp();

        protected override ValueTask<TResult> SendAsync()
        {
            CallDeadline deadline = CallDeadline.Fix(Runtime._clock, Timeout, OwnTimeout, inherits: true, _madeAt, out _);
            return Runtime.SendAsync<TArguments, TResult>(MethodId, arguments, deadline, deadline.Now(Runtime._clock), Metadata, Waits, Call.CancellationToken);
        }
    }

    /// <summary>A call that streams its arguments and has one answer.</summary>
    private sealed class ClientStreamChain<TArguments, TItem, TResult>(ClientRuntime runtime, MuxClientCall call, uint methodId, TArguments arguments, IAsyncEnumerable<TItem> items, CallSettings? settings)
        : ValueChain<TResult>(runtime, call, methodId, settings)
        where TArguments : struct
    {
        protected override ValueTask<TResult> SendAsync() =>
            OutgoingStreamCall.SendAsync<TArguments, TItem, TResult>(new CallsSource(Runtime, Timeout, OwnTimeout, Waits), MethodId, arguments, items, Metadata, Call.CancellationToken);
    }

    /// <summary>A call whose answer is a stream: next() starts it (<see cref="Started"/>) and lasts
    /// until the caller's enumeration has ended (<see cref="End"/>).</summary>
    private sealed class ReceiveStreamChain<TArguments, TItem, TResult>(ClientRuntime runtime, MuxClientCall call, uint methodId, TArguments arguments, IAsyncEnumerable<TItem>? items, CallSettings? settings)
        : CallChain(runtime, call, methodId, settings)
        where TArguments : struct
    {
        // The stream once next() has started it; null when the chain ended without starting it.
        private readonly TaskCompletionSource<IAsyncEnumerator<TResult>?> _started = new(TaskCreationOptions.RunContinuationsAsynchronously);

        // Completed when the caller's enumeration has ended, failed with what it failed with.
        private readonly TaskCompletionSource _ended = new(TaskCreationOptions.RunContinuationsAsynchronously);

        public Task<IAsyncEnumerator<TResult>?> Started => _started.Task;

        public async Task RunAsync()
        {
            try
            {
                await InvokeAsync().ConfigureAwait(false);
            }
            finally
            {
                // A next() called after this is refused rather than left waiting for an enumeration
                // that never comes. One that made the call sets its stream before it returns, which
                // may come after the interceptors' own return (next() run on another thread).
                Close();
                await WhenCallReturned().ConfigureAwait(false);
                _started.TrySetResult(null);
            }
        }

        public void End(Exception? failure)
        {
            if (failure is null)
            {
                _ended.TrySetResult();
            }
            else
            {
                _ended.TrySetException(failure);
            }
        }

        protected override async ValueTask InvokeCallAsync()
        {
            IAsyncEnumerable<TResult> stream = OutgoingStreamCall.ReceiveAsync<TArguments, TItem, TResult>(new CallsSource(Runtime, Timeout, OwnTimeout, Waits), MethodId, arguments, items, Metadata, Call.CancellationToken);
            _started.TrySetResult(stream.GetAsyncEnumerator());
            await _ended.Task.ConfigureAwait(false);
        }
    }

    /// <summary>What every client chain shares: the interceptors, and what they leave of the call.</summary>
    private abstract class CallChain(ClientRuntime runtime, MuxClientCall call, uint methodId, CallSettings? settings)
        : InterceptorChain
    {
        protected ClientRuntime Runtime { get; } = runtime;

        public MuxClientCall Call { get; } = call;

        protected uint MethodId { get; } = methodId;

        protected CallSettings? Settings { get; } = settings;

        /// <summary>Why the call fails when the interceptors returned without reaching it.</summary>
        public InvalidOperationException NotInvoked() => NotInvoked(Call.MethodName, "A client interceptor stops a call by throwing.");

        /// <summary>The metadata section to send: encoded again only when an interceptor changed it.</summary>
        protected byte[]? Metadata => Call.IsMetadataModified ? Call.CallMetadata.Encode() : Settings?.EncodedMetadata;

        /// <summary>The call's timeout as the interceptors left it, in the clock's units.</summary>
        protected long Timeout => ClockDeadline.ToTimestampSpan(Runtime._clock, Call.Timeout);

        protected bool Waits => Runtime.WaitsForConnection(Settings);

        /// <summary>The call's timeout when it is its own (the bound proxy's, or an interceptor's), for messages.</summary>
        protected TimeSpan? OwnTimeout => Call.Timeout != Runtime._callTimeoutSpan || Settings?.Timeout is not null ? Call.Timeout : null;

        protected override int Count => Runtime._interceptors.Length;

        protected override ValueTask InvokeInterceptorAsync(int index, Func<ValueTask> next) => Runtime._interceptors[index].InvokeAsync(Call, next);

        protected override string DescribeInterceptor(int index) => Runtime._interceptors[index].GetType().FullName ?? "?";
    }
}
