using System.Collections.ObjectModel;
using System.Runtime.CompilerServices;
using System.Threading.Tasks.Sources;
using Mux.Protocol;

namespace Mux.Connection;

// The call pipeline (issue 25): the call's metadata, and the server interceptors around its handler.
// A call without metadata on a side without interceptors touches none of it but two tests.
// The IValueTaskSource is the task of the chain's last next() (see _handlerOutcome).
internal sealed partial class IncomingCall : IValueTaskSource
{
    private static readonly IReadOnlyDictionary<string, string> s_noMetadata = ReadOnlyDictionary<string, string>.Empty;

    // Whether the Request's body starts with a metadata section (FrameFlags.Metadata). Set by Start.
    private bool _hasMetadata;

    // The call's metadata, read from the section by Execute before any interceptor or the handler
    // runs; null when it carried none. Reset by Start.
    private Dictionary<string, string>? _metadata;

    // Where the arguments start in the request's bytes: after the metadata section, if any. Set by
    // ReadMetadata; reset by Start.
    private int _argumentsStart;

    // While interceptors run, the handler's answer waits here (DeferResult) until the last of them
    // has returned, so that one that throws after next() still decides how the call ends. Both set
    // and cleared on the handler's side of the call (its awaits order them); reset by Start.
    private bool _deferResult;
    private DeferredResult? _deferredResult;

    // The holder DeferResult used last, kept with this pooled call for its next call of the same
    // result type: it holds a value only between the handler's answer and Send, both within one
    // call, and nothing outside this object ever sees it.
    private DeferredResult? _deferredHolder;

    // The handler, when it did not complete at once under interceptors (RunHandlerAsync, which
    // completes once it has handed the handler's outcome to the task of next()): the call must not
    // end (and this object be reused for another call) before, even if an interceptor returned
    // without awaiting next(). Awaited exactly once, by InvokeInterceptorsAsync, so that its state
    // machine, from a pool, goes back to it, and read only once the chain's last next() has
    // returned (InterceptorChain.WhenCallReturned). Set by that next(), on whatever thread it runs;
    // reset by Start.
    private ValueTask _runningHandler;

    // The task of the chain's last next(), whose source this object is: completed with the
    // handler's outcome, so that the call can tell a failure an interceptor took from the task of
    // next() (and caught, if it returned) from one nobody took, which is still the caller's. Reset
    // by InvokeInterceptorsAsync before any interceptor runs, so that it never holds an earlier
    // call's outcome; the calls of a side without interceptors never touch it.
    private ManualResetValueTaskSourceCore<bool> _handlerOutcome;

    // Whether an interceptor took the handler's outcome from the task of next() (its GetResult).
    // Set on the interceptor's thread of the moment; reset by InvokeInterceptorsAsync.
    private bool _handlerOutcomeTaken;

    // Whether the task of next() is over: the interceptors returned and the call holds the
    // handler's outcome, for its caller. A task of next() kept and awaited from then on is refused
    // (CheckNotLate), whether or not this object serves another call by then. Set and reset by
    // InvokeInterceptorsAsync.
    private volatile bool _handlerOutcomeOver;

    /// <summary>The call's metadata (MuxCallContext.Metadata); empty when it carried none.</summary>
    public IReadOnlyDictionary<string, string> Metadata => _metadata ?? s_noMetadata;

    /// <summary>Resets the pipeline's state for a new request. Reader loop, in Start.</summary>
    private void StartPipeline(bool hasMetadata)
    {
        _hasMetadata = hasMetadata;
        _metadata = null;
        _argumentsStart = 0;
        _deferResult = false;
        _deferredResult = null;
        _runningHandler = default;
    }

    /// <summary>Reads the metadata section at the start of the request's bytes, once, on the
    /// handler's thread (never the reader loop). Throws what the caller gets: a section over this
    /// side's MaxMetadataSize fails the call as MessageTooLarge, an unreadable one as
    /// InvalidArguments; either way only this call fails.</summary>
    [MethodImpl(MethodImplOptions.NoInlining)]
    private void ReadMetadata()
    {
        int max = Connection.Settings.MaxMetadataSize;
        switch (MetadataSection.Read(_arguments.Sequence, max, out Dictionary<string, string>? entries, out long consumed, out long size, out string? problem))
        {
            case MetadataSection.ReadStatus.Ok:
                _metadata = entries!.Count == 0 ? null : entries;
                _argumentsStart = (int)consumed;
                return;
            case MetadataSection.ReadStatus.TooLarge:
                string options = Connection.OptionsName;
                throw new MuxRemoteException(
                    MuxStatusCode.MessageTooLarge,
                    $"The metadata of the {Connection.PeerName}'s call to {MethodName} is {size} bytes, over this {Connection.SideName}'s MaxMetadataSize of {max} bytes ({options}.MaxMetadataSize); the call was not run. Send less metadata, or raise {options}.MaxMetadataSize.",
                    null);
            default:
                throw new InvalidArgumentsException($"The metadata of the call to {MethodName} could not be read: {problem}.", null);
        }
    }

    /// <summary>Runs the side's interceptors around the handler, then sends the answer the handler
    /// left (see <see cref="DeferResult"/>). Its state machine comes from a pool, like the handler's.</summary>
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

            // As the interceptors returned: one that takes the outcome later, from a task of next()
            // it kept, no longer decides how the call ends.
            taken = Volatile.Read(ref _handlerOutcomeTaken);
            // The handler may still hold this call: it runs on (an interceptor returned without
            // awaiting next(), even before next() had returned), or is still handing its outcome
            // to the interceptor that awaited it. Its answer (or failure) is the call's either way,
            // and waited for here: first the last next()'s return, which records the handler.
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
                throw chain.NotInvoked(MethodName, "A server interceptor refuses a call by throwing, for example MuxRemoteException(MuxStatusCode.PermissionDenied, \"...\").");
            }

            // Pending only when the handler completed at once without answering: no failure, none to take.
            if (_handlerOutcome.GetStatus(_handlerOutcome.Version) != ValueTaskSourceStatus.Pending)
            {
                try
                {
                    // Throws the handler's failure: one no interceptor took is the caller's, whether
                    // the handler failed before the interceptor that left next() returned or after.
                    _handlerOutcome.GetResult(_handlerOutcome.Version);
                }
                catch (Exception failure) when (taken)
                {
                    throw new InvalidOperationException($"{MethodName} has no answer to send: its handler failed, and a server interceptor caught the exception without throwing one of its own.", failure);
                }
            }

            // A generated handler always answers: this one was written by hand, or an activator
            // did not run it (or swallowed its failure).
            throw new InvalidOperationException($"{MethodName} has no answer to send: its handler completed without handing back a result (MuxServerCall.ReturnAsync), or a MuxServiceActivator returned without running it.");
        }

        answer.Send(this);
    }

    /// <summary>Makes the task of the chain's last next() for a handler that did not complete at
    /// once, or failed: completed with its outcome, through this object (an interceptor's await
    /// takes it, see <see cref="IValueTaskSource.GetResult"/>).</summary>
    private ValueTask TrackHandler(ValueTask handler)
    {
        // What the call waits for, if the interceptor did not.
        _runningHandler = RunHandlerAsync(handler);
        return new ValueTask(this, _handlerOutcome.Version);
    }

    /// <summary>Hands the handler's outcome to the task of next(), whose awaiting interceptor may
    /// go on at once, inside this. The call waits for this task to complete, so this object serves
    /// no other call before it has returned.</summary>
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

    /// <summary>Refuses a task of next() awaited after its call has ended: its outcome was this
    /// call's to send, and this object may serve another call by now.</summary>
    private short CheckNotLate(short token) =>
        _handlerOutcomeOver || token != _handlerOutcome.Version
            ? throw new InvalidOperationException("The task of a server interceptor's next() was awaited after its call had ended (its interceptors had returned, and the handler's answer or failure was the call's to send). Like any ValueTask it can be awaited once, while its call runs: await next() before the interceptor returns.")
            : token;

    /// <summary>Keeps the handler's result until the interceptors have returned.</summary>
    private void DeferResult<T>(T value)
    {
        var holder = _deferredHolder as DeferredResult<T> ?? new DeferredResult<T>();
        holder.Value = value;
        _deferredHolder = holder;
        _deferredResult = holder;
    }

    /// <summary>A handler's result held while interceptors run.</summary>
    private abstract class DeferredResult
    {
        public abstract void Send(IncomingCall call);

        /// <summary>Lets go of the result, sent or not: the holder outlives the call, with its
        /// pooled call (see _deferredHolder).</summary>
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
