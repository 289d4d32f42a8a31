using System.Collections.ObjectModel;
using System.Runtime.CompilerServices;
using System.Runtime.ExceptionServices;
using Mux.Protocol;

namespace Mux.Connection;

// The call pipeline (issue 25): the call's metadata, and the server interceptors around its handler.
// A call without metadata on a side without interceptors touches none of it but two tests.
internal sealed partial class IncomingCall
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

    // The handler, when it did not complete at once under interceptors: the call must not end (and
    // this object be reused for another call) while it runs, even if an interceptor returned
    // without awaiting next(). Set by the chain's last next(); reset by Start.
    private Task? _runningHandler;

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
        _runningHandler = null;
    }

    /// <summary>Reads the metadata section at the start of the request's bytes, once, on the
    /// handler's thread (never the reader loop). Throws what the caller gets: a section over this
    /// side's MaxMetadataSize fails the call as MessageTooLarge, an unreadable one as
    /// InvalidArguments; either way only this call fails.</summary>
    [MethodImpl(MethodImplOptions.NoInlining)]
    private void ReadMetadata()
    {
        int max = Connection.MaxMetadataSize;
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
        Task? orphaned = null;
        _deferResult = true;
        try
        {
            await chain.InvokeAsync().ConfigureAwait(false);
        }
        finally
        {
            chain.Close(); // Returned or refused: a next() an interceptor kept is refused from here on.
            if (_runningHandler is { IsCompleted: false } handler)
            {
                // An interceptor returned without awaiting next(): the handler still holds this
                // call, so its answer (or failure) is still the call's, and waited for here.
                orphaned = handler;
                await handler.ConfigureAwait(ConfigureAwaitOptions.SuppressThrowing);
            }

            answer = _deferredResult;
            _deferredResult = null;
            _deferResult = false;
        }

        if (answer is null)
        {
            if (orphaned?.Exception?.InnerException is Exception failure)
            {
                ExceptionDispatchInfo.Throw(failure); // No interceptor saw it: the caller gets it.
            }

            throw chain.CallInvoked
                ? new InvalidOperationException($"{MethodName} has no answer to send: its handler failed, and a server interceptor caught the exception without throwing one of its own.")
                : chain.NotInvoked(MethodName, "A server interceptor refuses a call by throwing, for example MuxRemoteException(MuxStatusCode.PermissionDenied, \"...\").");
        }

        answer.Send(this);
    }

    /// <summary>Keeps the handler's result until the interceptors have returned.</summary>
    private void DeferResult<T>(T value) => _deferredResult = new DeferredResult<T>(value);

    /// <summary>A handler's result held while interceptors run.</summary>
    private abstract class DeferredResult
    {
        public abstract void Send(IncomingCall call);
    }

    private sealed class DeferredResult<T>(T value) : DeferredResult
    {
        public override void Send(IncomingCall call) => call.SendResultNow(value);
    }

    /// <summary>The server interceptors of one call; the last next() runs the handler.</summary>
    private sealed class ServerInterceptorChain(IncomingCall call, IMuxServerInterceptor[] interceptors) : InterceptorChain(interceptors.Length)
    {
        // The context every interceptor of the call sees (and the handler too, if it asks).
        private readonly MuxCallContext _context = call.Context;

        protected override ValueTask InvokeInterceptorAsync(int index, Func<ValueTask> next) => interceptors[index].InvokeAsync(_context, next);

        protected override ValueTask InvokeCallAsync()
        {
            ValueTask handler = call._method.InvokeAsync(call.Public);
            if (handler.IsCompleted)
            {
                return handler;
            }

            // A Task (allocated only for a handler that has to wait) can be awaited twice: by the
            // interceptor, and by the call if the interceptor did not.
            call._runningHandler = handler.AsTask();
            return new ValueTask(call._runningHandler);
        }

        protected override string DescribeInterceptor(int index) => interceptors[index].GetType().FullName ?? "?";
    }
}
