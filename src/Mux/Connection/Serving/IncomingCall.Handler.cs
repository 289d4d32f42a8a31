using System.Diagnostics;
using System.Runtime.CompilerServices;
using MessagePack;
using Mux.Protocol;
using Mux.Serialization;

namespace Mux.Connection;

// The handler's run (Execute, on the thread pool) and what its generated dispatcher calls: reading
// the arguments, and handing back the result (ReturnAsync), which becomes the call's Response.
internal sealed partial class IncomingCall
{
    /// <summary>Reads the request's argument list; unreadable arguments fail the call alone with
    /// <see cref="MuxStatusCode.InvalidArguments"/>.</summary>
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

    /// <summary>Sends a handler's result once it completes.</summary>
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

    /// <summary>Sends a handler's (empty) result once it completes.</summary>
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

    /// <summary>A service method returned a null Task.</summary>
    public InvalidOperationException NullTask() => new($"{MethodName} returned a null Task; a service method must return a Task.");

    // Pooled state machines: a handler that completes asynchronously allocates no box per request.
    // Execute's continuation (OnHandlerCompleted) awaits exactly once, which returns the box.
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

        // Read once: a handler that fails at once is finished (its telemetry stopped) before the
        // finally below runs.
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
            Finish(null);
            return;
        }

        _pendingHandler = pending;
        if (pending.IsCompleted)
        {
            OnHandlerCompleted(); // Failed without ever waiting: no need to go through the pool.
        }
        else
        {
            // A continuation kept by this object rather than an async method, whose state machine
            // would be allocated per request. Like an await with ConfigureAwait(false), it runs on
            // the thread that completes the handler.
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

        Finish(failure);
    }
}
