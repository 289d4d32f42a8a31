using System.Runtime.CompilerServices;
using System.Runtime.ExceptionServices;
using System.Threading.Tasks.Sources;
using Mux.Connection;
using Mux.Streaming;

namespace Mux.Client;

// Calls through the client's interceptors (MuxClientOptions.Interceptors). A client without any never comes here.
internal sealed partial class CallInvoker
{
    private IAsyncEnumerable<TResult> ReceiveStream<TArguments, TItem, TResult>(
        uint methodId, TArguments arguments, IAsyncEnumerable<TItem>? items, CancellationToken cancellationToken)
        where TArguments : struct =>
        _interceptors.Length != 0
            ? InterceptStreamAsync<TArguments, TItem, TResult>(methodId, arguments, items, cancellationToken)
            : OutgoingStreamCall.ReceiveAsync<TArguments, TItem, TResult>(
                this, methodId, arguments, items, _settings.EncodedMetadata, cancellationToken);

    /// <summary>What the interceptors of one call see, starting from this invoker's settings.</summary>
    private MuxClientCall NewCall(uint methodId, CancellationToken cancellationToken) =>
        new(MuxServiceRegistry.GetMethodDisplayName(methodId), _settings.Metadata, _settings.TimeoutSpan, cancellationToken);

    /// <summary>
    /// A streaming call through the interceptors, run once around the whole call: the last interceptor's next() starts the stream and
    /// completes when the caller's enumeration has ended (throwing what it failed with); the caller sees what the interceptors made of it
    /// at the end.
    /// </summary>
    private async IAsyncEnumerable<TResult> InterceptStreamAsync<TArguments, TItem, TResult>(
        uint methodId, TArguments arguments, IAsyncEnumerable<TItem>? items, [EnumeratorCancellation] CancellationToken cancellationToken)
        where TArguments : struct
    {
        var chain = new ReceiveStreamChain<TArguments, TItem, TResult>(this, NewCall(methodId, cancellationToken), methodId, arguments, items);
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

            // next() lasts until End: interceptors that returned already did not await it, and none of them can take the stream's failure,
            // which stays the caller's.
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
            throw new InvalidOperationException(
                $"The stream of {chain.Call.MethodName} failed, and a client interceptor caught the exception without throwing one of its own.",
                failure);
        }
    }

    /// <summary>The interceptors of one call whose answer is a value: the last next() sends it, and returns a task of the call that this
    /// chain is the source of.</summary>
    private abstract class ValueChain<TResult>(CallInvoker invoker, MuxClientCall call, uint methodId)
        : CallChain(invoker, call, methodId), IValueTaskSource
    {
        // The call's result, and whether it has one: a call that failed has none, and neither has one still running. Written by the call's
        // completion; read after the chain.
        private TResult? _result;
        private bool _hasResult;

        // The task of the last next(), completed with the call; reset never, as a chain is one call's.
        private ManualResetValueTaskSourceCore<bool> _sent;

        // The call's completion, while it runs; default when it completed at once. An interceptor that returns without awaiting next()
        // leaves it running: the caller waits for it here. Awaited exactly once (by RunAsync, whatever the interceptors did with next()),
        // so its state machine, from a pool, goes back to it. Set by the last next(), on whatever thread it runs, and read only once that
        // next() has returned (WhenCallReturned).
        private ValueTask _running;

        // Whether an interceptor took the call's outcome from the task of next(): a failure it did not rethrow was caught, where one nobody
        // took is still the caller's.
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

            // An interceptor that returned without awaiting next() left the call running (next() run on another thread may even be in its
            // synchronous part still): it is still the caller's, so its outcome is theirs too, whenever it comes, and nothing of it
            // outlives their await. Awaited when complete too: see _running.
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
                    throw new InvalidOperationException(
                        $"The call to {Call.MethodName} has no result to return: it failed, and a client interceptor caught the exception " +
                        "without throwing one of its own.",
                        failure);
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
    private sealed class UnaryChain<TArguments, TResult>(CallInvoker invoker, MuxClientCall call, uint methodId, TArguments arguments)
        : ValueChain<TResult>(invoker, call, methodId)
        where TArguments : struct
    {
        // When the user made the call: its deadline counts from here. Only a unary call has one.
        private readonly long _madeAt = invoker.Clock.GetTimestamp();

        protected override ValueTask<TResult> SendAsync()
        {
            CallDeadline deadline = Invoker._settings.FixDeadline(Call.Timeout, _madeAt);
            long now = deadline.Now(Invoker.Clock);
            return Invoker.SendAsync<TArguments, TResult>(MethodId, arguments, deadline, now, Metadata, Call.CancellationToken);
        }
    }

    /// <summary>A call that streams its arguments and has one answer.</summary>
    private sealed class ClientStreamChain<TArguments, TItem, TResult>(
        CallInvoker invoker, MuxClientCall call, uint methodId, TArguments arguments, IAsyncEnumerable<TItem> items)
        : ValueChain<TResult>(invoker, call, methodId)
        where TArguments : struct
    {
        protected override ValueTask<TResult> SendAsync() =>
            OutgoingStreamCall.SendAsync<TArguments, TItem, TResult>(Source, MethodId, arguments, items, Metadata, Call.CancellationToken);
    }

    /// <summary>A call whose answer is a stream: next() starts it (<see cref="Started"/>) and lasts until the caller's enumeration has
    /// ended (<see cref="End"/>).</summary>
    private sealed class ReceiveStreamChain<TArguments, TItem, TResult>(
        CallInvoker invoker, MuxClientCall call, uint methodId, TArguments arguments, IAsyncEnumerable<TItem>? items)
        : CallChain(invoker, call, methodId)
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
                // A next() called after this is refused rather than left waiting for an enumeration that never comes. One that made the
                // call sets its stream before it returns, which may come after the interceptors' own return (next() run on another thread).
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
            IAsyncEnumerable<TResult> stream =
                OutgoingStreamCall.ReceiveAsync<TArguments, TItem, TResult>(Source, MethodId, arguments, items, Metadata, Call.CancellationToken);
            _started.TrySetResult(stream.GetAsyncEnumerator());
            await _ended.Task.ConfigureAwait(false);
        }
    }

    /// <summary>What every client chain shares: the interceptors, and what they leave of the call.</summary>
    private abstract class CallChain(CallInvoker invoker, MuxClientCall call, uint methodId) : InterceptorChain
    {
        protected CallInvoker Invoker { get; } = invoker;

        public MuxClientCall Call { get; } = call;

        protected uint MethodId { get; } = methodId;

        /// <summary>Why the call fails when the interceptors returned without reaching it.</summary>
        public InvalidOperationException NotInvoked() => NotInvoked(Call.MethodName, "A client interceptor stops a call by throwing.");

        /// <summary>The metadata section to send: encoded again only when an interceptor changed it.</summary>
        protected byte[]? Metadata => Call.IsMetadataModified ? Call.CallMetadata.Encode() : Invoker._settings.EncodedMetadata;

        /// <summary>Where a streaming call waits for its connection, within the timeout the interceptors left.</summary>
        protected CallSource Source => new CallInvoker(Invoker._runtime, Invoker._settings.WithTimeout(Call.Timeout));

        protected override int Count => Invoker._interceptors.Length;

        protected override ValueTask InvokeInterceptorAsync(int index, Func<ValueTask> next) => Invoker._interceptors[index].InvokeAsync(Call, next);

        protected override string DescribeInterceptor(int index) => Invoker._interceptors[index].GetType().FullName ?? "?";
    }
}
