using System.Collections.ObjectModel;
using System.Diagnostics;
using System.Runtime.CompilerServices;
using System.Threading.Tasks.Sources;
using MessagePack;
using Mux.Protocol;
using Mux.Serialization;

namespace Mux.Connection;

// The handler's run (Execute, on the thread pool), what its dispatcher calls, and the pipeline: the call's metadata and the
// server interceptors around its handler. The IValueTaskSource is the task of the chain's last next().
internal sealed partial class IncomingCall : IValueTaskSource
{
    private static readonly IReadOnlyDictionary<string, string> s_noMetadata = ReadOnlyDictionary<string, string>.Empty;

    // Whether the Request's body starts with a metadata section (FrameFlags.Metadata). Set by Start.
    private bool _hasMetadata;

    // Read by Execute before any interceptor or the handler runs; null when the call carried none. Reset by Start.
    private Dictionary<string, string>? _metadata;

    // Where the arguments start in the request's bytes, after any metadata section. Set by ReadMetadata; reset by Start.
    private int _argumentsStart;

    // The handler's answer, held while interceptors run so one that throws after next() still decides how the call ends.
    private bool _deferResult;
    private DeferredResult? _deferredResult;

    // The holder DeferResult used last, kept for the next call of the same result type; it holds a value only within a call.
    private DeferredResult? _deferredHolder;

    // A handler that did not complete at once under interceptors: the call must not end before it, even if an interceptor
    // returned without awaiting next(). Set by the last next(), on any thread; awaited once it has returned (WhenCallReturned).
    private ValueTask _runningHandler;

    // The handler's outcome, for the last next()'s task: a failure no interceptor took is still the caller's. Reset before each chain.
    private ManualResetValueTaskSourceCore<bool> _handlerOutcome;

    // Whether an interceptor took the handler's outcome (its GetResult). Set on the interceptor's thread of the moment.
    private bool _handlerOutcomeTaken;

    // Set once the interceptors returned: a task of next() awaited from then on is refused (CheckNotLate), whatever the call.
    private volatile bool _handlerOutcomeOver;

    public IReadOnlyDictionary<string, string> Metadata => _metadata ?? s_noMetadata;

    public TArguments ReadArguments<TArguments>()
    {
        try
        {
            // _argumentsStart skips the metadata section, if any.
            return _arguments.Message is { } message
                ? MessagePackSerializer.Deserialize<TArguments>(message.Payload.Slice(_argumentsStart), SerializerOptions)
                : MessagePackSerializer.Deserialize<TArguments>(_arguments.Memory[_argumentsStart..], SerializerOptions);
        }
        catch (MessagePackSerializationException ex)
        {
            throw new InvalidArgumentsException($"The arguments of {MethodName} could not be read: {ex.GetBaseException().Message}", ex);
        }
    }

    public ValueTask ReturnAsync<T>(ValueTask<T> result)
    {
        if (result.IsCompletedSuccessfully)
        {
            SendResult(result.Result);
            return ValueTask.CompletedTask;
        }

        SkipUnopenedStream();
        return AwaitResultAsync(result);
    }

    public ValueTask ReturnAsync(ValueTask result)
    {
        if (result.IsCompletedSuccessfully)
        {
            result.GetAwaiter().GetResult(); // Releases a pooled source, if any.
            SendResult(default(VoidResult));
            return ValueTask.CompletedTask;
        }

        SkipUnopenedStream();
        return AwaitVoidAsync(result);
    }

    public InvalidOperationException NullTask() => new($"{MethodName} returned a null Task; a service method must return a Task.");

    // Pooled state machines, so an asynchronous handler allocates no box: OnHandlerCompleted awaits once, which returns it.
    [AsyncMethodBuilder(typeof(PoolingAsyncValueTaskMethodBuilder))]
    private async ValueTask AwaitResultAsync<T>(ValueTask<T> result) => SendResult(await result.ConfigureAwait(false));

    [AsyncMethodBuilder(typeof(PoolingAsyncValueTaskMethodBuilder))]
    private async ValueTask AwaitVoidAsync(ValueTask result)
    {
        await result.ConfigureAwait(false);
        SendResult(default(VoidResult));
    }

    private void SendResult<T>(T value)
    {
        if (_deferResult)
        {
            DeferResult(value); // Interceptors run around the handler: they answer once they return.
            return;
        }

        SendResultNow(value);
    }

    private void SendResultNow<T>(T value)
    {
        // The slot first, so that a caller sending its next request on reading the answer finds it free.
        ReleaseSlot();
        var body = new MessagePackBody<T>(value, SerializerOptions);
        _calls.Outbound.SendFrame(FrameType.Response, CallId, 0, ref body, _calls.IdSpace);
        _answered = true; // Not before: a result that could not be sent is the call's failure to report.
    }

    void IThreadPoolWorkItem.Execute()
    {
        ValueTask pending;

        // Read once: a handler that fails at once is finished (its telemetry stopped) before the finally below runs.
        bool observed = Telemetry.IsStarted;
        Activity? previous = observed ? Telemetry.EnterHandler() : null;

        // Only with propagation on and a deadline to pass on: setting the ambient context costs an
        // ExecutionContext per call. The handler's awaits capture it; this thread gets its own back.
        bool ambient = DeadlineTimestamp != long.MaxValue && _calls.PropagatesCallContext;
        MuxCallContext? outer = null;
        try
        {
            if (_hasMetadata)
            {
                ReadMetadata(); // Before anything makes the call's context, which keeps the metadata.
            }

            if (ambient)
            {
                outer = MuxCallContext.Enter(Context);
            }

            IMuxServerInterceptor[] interceptors = _calls.Interceptors;
            pending = interceptors.Length == 0 ? _method.InvokeAsync(Public) : InvokeInterceptorsAsync(interceptors);
        }
        catch (Exception ex)
        {
            Finish(ex);
            return;
        }
        finally
        {
            if (observed)
            {
                Activity.Current = previous;
            }

            if (ambient)
            {
                MuxCallContext.Restore(outer);
            }
        }

        if (pending.IsCompletedSuccessfully)
        {
            pending.GetAwaiter().GetResult();
            Finish(_answered ? null : NoAnswer());
            return;
        }

        _pendingHandler = pending;
        if (pending.IsCompleted)
        {
            OnHandlerCompleted(); // Failed without ever waiting: no need to go through the pool.
        }
        else
        {
            // Kept by this object, where an async method would allocate a state machine; runs on the thread completing the handler.
            pending.ConfigureAwait(false).GetAwaiter().UnsafeOnCompleted(_onHandlerCompleted ??= OnHandlerCompleted);
        }
    }

    private void OnHandlerCompleted()
    {
        ValueTask pending = _pendingHandler;
        _pendingHandler = default;
        Exception? failure = null;
        try
        {
            pending.GetAwaiter().GetResult(); // Also gives a pooled source back.
        }
        catch (Exception ex)
        {
            failure = ex;
        }

        Finish(failure ?? (_answered ? null : NoAnswer()));
    }

    // A generated handler always answers: this one was written by hand, or an activator did not run it. Its caller must hear
    // so, or it waits until its deadline. The handler's task completes after the answer it sent, if any, set _answered.
    private InvalidOperationException NoAnswer() => new(
        $"{MethodName} has no answer to send: its handler completed without handing back a result (MuxServerCall.ReturnAsync), " +
        "or a MuxServiceActivator returned without running it.");

    private void StartPipeline(bool hasMetadata)
    {
        _hasMetadata = hasMetadata;
        _metadata = null;
        _argumentsStart = 0;
        _deferResult = false;
        _deferredResult = null;
        _runningHandler = default;
    }

    /// <summary>On the handler's thread, never the reader loop: what it throws fails only this call.</summary>
    [MethodImpl(MethodImplOptions.NoInlining)]
    private void ReadMetadata()
    {
        int max = Connection.Settings.MaxMetadataSize;
        switch (MetadataSection.Read(
            _arguments.Sequence, max, out Dictionary<string, string>? entries, out long consumed, out long size, out string? problem))
        {
            case MetadataSection.ReadStatus.Ok:
                _metadata = entries!.Count == 0 ? null : entries;
                _argumentsStart = (int)consumed;
                return;
            case MetadataSection.ReadStatus.TooLarge:
                string options = Connection.OptionsName;
                throw new MuxRemoteException(
                    MuxStatusCode.MessageTooLarge,
                    $"The metadata of the {Connection.PeerName}'s call to {MethodName} is {size} bytes, over this {Connection.SideName}'s " +
                    $"MaxMetadataSize of {max} bytes ({options}.MaxMetadataSize); the call was not run. Send less metadata, or raise " +
                    $"{options}.MaxMetadataSize.",
                    null);
            default:
                throw new InvalidArgumentsException($"The metadata of the call to {MethodName} could not be read: {problem}.", null);
        }
    }

    /// <summary>Runs the interceptors around the handler, then sends the answer the handler left (DeferResult).</summary>
    [AsyncMethodBuilder(typeof(PoolingAsyncValueTaskMethodBuilder))]
    private async ValueTask InvokeInterceptorsAsync(IMuxServerInterceptor[] interceptors)
    {
        var chain = new ServerInterceptorChain(this, interceptors);
        DeferredResult? answer;
        bool taken;
        bool returned = false;
        _deferResult = true;
        _handlerOutcomeTaken = false;
        _handlerOutcome.Reset(); // Before any next(): a task of next() of an earlier call is refused from here on.
        _handlerOutcomeOver = false;
        try
        {
            await chain.InvokeAsync().ConfigureAwait(false);
            returned = true;
        }
        finally
        {
            chain.Close(); // Returned or refused: a next() an interceptor kept is refused from here on.

            // As the interceptors returned: one that takes the outcome later, from a task of next() it kept, no longer decides.
            taken = Volatile.Read(ref _handlerOutcomeTaken);
            // The handler may still run (an interceptor returned without awaiting next()) or be handing its outcome over: its
            // answer or failure is the call's either way. First the last next()'s return, which records the handler.
            await chain.WhenCallReturned().ConfigureAwait(false);
            await _runningHandler.ConfigureAwait(false); // Never faults: the failure is the task of next()'s.
            _handlerOutcomeOver = true;

            answer = _deferredResult;
            _deferredResult = null;
            _deferResult = false;
            if (!returned)
            {
                answer?.Drop(); // An interceptor threw after the handler answered: the call fails with that.
            }
        }

        if (answer is null)
        {
            if (!chain.CallInvoked)
            {
                throw chain.NotInvoked(
                    MethodName,
                    "A server interceptor refuses a call by throwing, for example MuxRemoteException(MuxStatusCode.PermissionDenied, \"...\").");
            }

            // Pending only when the handler completed at once without answering: no failure, none to take.
            if (_handlerOutcome.GetStatus(_handlerOutcome.Version) != ValueTaskSourceStatus.Pending)
            {
                try
                {
                    // A failure no interceptor took is the caller's, whether it came before the interceptors returned or after.
                    _handlerOutcome.GetResult(_handlerOutcome.Version);
                }
                catch (Exception failure) when (taken)
                {
                    throw new InvalidOperationException(
                        $"{MethodName} has no answer to send: its handler failed, and a server interceptor caught the exception without " +
                        "throwing one of its own.", failure);
                }
            }

            throw NoAnswer();
        }

        answer.Send(this);
    }

    /// <summary>The task of the last next() for a handler that did not complete at once: completed with its outcome.</summary>
    private ValueTask TrackHandler(ValueTask handler)
    {
        // What the call waits for, if the interceptor did not.
        _runningHandler = RunHandlerAsync(handler);
        return new ValueTask(this, _handlerOutcome.Version);
    }

    /// <summary>The awaiting interceptor may go on inside this, so the call waits for it before this object serves another.</summary>
    [AsyncMethodBuilder(typeof(PoolingAsyncValueTaskMethodBuilder))]
    private async ValueTask RunHandlerAsync(ValueTask handler)
    {
        try
        {
            await handler.ConfigureAwait(false);
        }
        catch (Exception ex)
        {
            _handlerOutcome.SetException(ex);
            return;
        }

        _handlerOutcome.SetResult(true);
    }

    ValueTaskSourceStatus IValueTaskSource.GetStatus(short token) => _handlerOutcome.GetStatus(CheckNotLate(token));

    void IValueTaskSource.OnCompleted(Action<object?> continuation, object? state, short token, ValueTaskSourceOnCompletedFlags flags) =>
        _handlerOutcome.OnCompleted(continuation, state, CheckNotLate(token), flags);

    void IValueTaskSource.GetResult(short token)
    {
        CheckNotLate(token);
        Volatile.Write(ref _handlerOutcomeTaken, true); // Before GetResult, which throws a failure.
        _handlerOutcome.GetResult(token);
    }

    private short CheckNotLate(short token) =>
        _handlerOutcomeOver || token != _handlerOutcome.Version
            ? throw new InvalidOperationException(
                "The task of a server interceptor's next() was awaited after its call had ended (its interceptors had returned, and " +
                "the handler's answer or failure was the call's to send). Like any ValueTask it can be awaited once, while its call " +
                "runs: await next() before the interceptor returns.")
            : token;

    private void DeferResult<T>(T value)
    {
        var holder = _deferredHolder as DeferredResult<T> ?? new DeferredResult<T>();
        holder.Value = value;
        _deferredHolder = holder;
        _deferredResult = holder;
    }

    private abstract class DeferredResult
    {
        public abstract void Send(IncomingCall call);

        // Lets go of the result, sent or not: the holder outlives the call (see _deferredHolder).
        public abstract void Drop();
    }

    private sealed class DeferredResult<T> : DeferredResult
    {
        public T Value { get; set; } = default!;

        public override void Send(IncomingCall call)
        {
            T value = Value;
            Drop();
            call.SendResultNow(value);
        }

        public override void Drop() => Value = default!;
    }

    /// <summary>The server interceptors of one call; the last next() runs the handler.</summary>
    private sealed class ServerInterceptorChain(IncomingCall call, IMuxServerInterceptor[] interceptors) : InterceptorChain
    {
        // The context every interceptor of the call sees (and the handler too, if it asks).
        private readonly MuxCallContext _context = call.Context;

        protected override int Count => interceptors.Length;

        protected override ValueTask InvokeInterceptorAsync(int index, Func<ValueTask> next) => interceptors[index].InvokeAsync(_context, next);

        protected override ValueTask InvokeCallAsync()
        {
            ValueTask handler;
            try
            {
                handler = call._method.InvokeAsync(call.Public);
            }
            catch (Exception ex)
            {
                handler = ValueTask.FromException(ex); // Still the handler's failure, not the chain's.
            }

            return handler.IsCompletedSuccessfully ? handler : call.TrackHandler(handler);
        }

        protected override string DescribeInterceptor(int index) => interceptors[index].GetType().FullName ?? "?";
    }
}
