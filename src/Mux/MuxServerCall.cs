using System.Buffers;
using System.ComponentModel;
using System.Diagnostics;
using System.Runtime.CompilerServices;
using MessagePack;
using Mux.Connection;
using Mux.Diagnostics;
using Mux.Protocol;
using Mux.Serialization;
using Mux.Server;

namespace Mux;

/// <summary>
/// One call being served: its arguments, its cancellation token, and the way back to the caller.
/// A <see cref="MuxMethodHandler{TService}"/> reads the arguments, invokes the service and hands
/// the result to one of the <c>ReturnAsync</c> methods. Run on the thread pool, never on the
/// connection's reader loop, so a slow handler delays only its own call. Valid only until the
/// handler's task completes: the object is then reused for a later request of the same connection.
/// </summary>
public sealed partial class MuxServerCall : IThreadPoolWorkItem
{
    // Arguments up to this size are copied into _ownedArguments, kept across the lives of this
    // pooled object; larger ones into an array rented for the call. Small, because a connection
    // keeps as many calls as it ever ran at once (up to its call cap).
    private const int MaxOwnedArguments = 1024;

    // The longest delay CancellationTokenSource.CancelAfter accepts (uint.MaxValue - 1 ms).
    private static readonly TimeSpan s_longestTimer = TimeSpan.FromMilliseconds(uint.MaxValue - 1);

    // The connection the call arrived on (a server's, or a client's for calls its server started),
    // and what its answer is written with. Immutable.
    private readonly MuxConnection _connection;
    private readonly MessagePackSerializerOptions _serializerOptions;

    // The method being called. Set by Start on the reader loop before the call is queued.
    private ServerMethod _method = null!;

    // The request's MessagePack arguments, copied out of the receive buffer (which the reader loop
    // reuses) into _ownedArguments or a rented array. Set by Start; given back by Finish.
    private byte[]? _arguments;
    private int _argumentsLength;
    private bool _argumentsRented;
    private byte[]? _ownedArguments;

    // Instead of a copy: the pooled chunks of arguments that arrived in fragments, taken over from
    // the reader loop (copying 16 MiB there held up every small call's frame behind it). Set by
    // Start (then _arguments is empty); released by Finish or Abandon.
    private MessageReassembly? _argumentsMessage;

    // Created on first use of CancellationToken (most handlers never ask), or taken from
    // _spareCancellation. Replaced only via CompareExchange; reset to null by Start.
    private CancellationTokenSource? _cancellation;

    // 0 while the call runs, 1 once a cancel was requested (even before _cancellation existed),
    // 2 once Finish has claimed it: a Cancel read after that finds the call done and does nothing,
    // so no late cancel can reach a source reused for a later request. Reset to 0 by Start.
    private int _cancelRequested;

    // A source of an earlier request that no Cancel reached, reset for reuse (as Kestrel resets
    // RequestAborted's), so that methods taking a CancellationToken allocate none per request. Set
    // by Finish, taken by CreateCancellation, both within this object's current use.
    private CancellationTokenSource? _spareCancellation;

    // While the handler completes asynchronously: its task, and the continuation that finishes the
    // call (created once per pooled object). Set by Execute before the continuation is registered;
    // read and cleared by OnHandlerCompleted.
    private ValueTask _pendingHandler;
    private Action? _onHandlerCompleted;

    // 1 once this call has given back its connection's call slot: just before its answer is
    // queued, or when it is retired without one. Exchanged by whichever of those comes first; reset
    // by Start.
    private int _slotReleased;

    // Bumped by Start and by Finish, so a MuxCallContext made during one call can tell that its
    // call is over (this object is then reused). Written by the call's own owner of the moment
    // (reader loop in Start, handler side in Finish); read by any thread holding a context.
    private uint _generation;

    // The context a handler asked for (Context), made once per call; reset by Start.
    private MuxCallContext? _context;

    // Whether the call's span and duration are being recorded (ServerCallTelemetry holds them, so
    // that an unobserved call carries nothing for them). Set by Start only.
    private bool _observed;

    internal MuxServerCall(MuxConnection connection, MessagePackSerializerOptions serializerOptions, FrameFlags answerFlags = FrameFlags.None)
    {
        _connection = connection;
        _serializerOptions = serializerOptions;
        AnswerFlags = answerFlags;
    }

    /// <summary>The flags of this call's Response and Error frames: ServerInitiated when a client
    /// serves a call its server started. Immutable.</summary>
    internal FrameFlags AnswerFlags { get; }

    /// <summary>The connection the call arrived on (for MuxRemoteClient: the client to call back).</summary>
    internal MuxConnection Connection => _connection;

    /// <summary>The next call in the connection's pool of finished calls; only the pool touches it.</summary>
    internal MuxServerCall? NextPooled;

    /// <summary>Prepares this (new or reused) object for a request. Reader loop only, before the
    /// call is published anywhere.</summary>
    internal void Start(uint callId, ServerMethod method, in ReadOnlySequence<byte> arguments, long deadlineTimestamp)
    {
        _method = method;
        CallId = callId;
        DeadlineTimestamp = deadlineTimestamp;
        _context = null;
        Volatile.Write(ref _generation, _generation + 1);
        _cancellation = null;
        _cancelRequested = 0;
        _slotReleased = 0;
        ResetStreams();
        int length = checked((int)arguments.Length);
        if (length <= MaxOwnedArguments)
        {
            if (_ownedArguments is null || _ownedArguments.Length < length)
            {
                _ownedArguments = new byte[Math.Max(length, 64)];
            }

            _arguments = _ownedArguments;
            _argumentsRented = false;
        }
        else if (_connection.TakeDeliveredMessage(arguments) is { } message)
        {
            _argumentsMessage = message;
            _arguments = [];
            _argumentsRented = false;
            _argumentsLength = length;
            _observed = false;
            return;
        }
        else
        {
            _arguments = ArrayPool<byte>.Shared.Rent(length);
            _argumentsRented = true;
        }

        arguments.CopyTo(_arguments);
        _argumentsLength = length;
        _observed = false;
    }

    /// <summary>Starts the span and duration if anyone listens. Reader loop only, once the call
    /// has been admitted, so that the span includes the time the call waits for a thread.</summary>
    internal void StartTelemetry(in ReadOnlySequence<byte> traceContext)
    {
        if (ServerCallTelemetry.IsObserved)
        {
            _observed = true;
            ServerCallTelemetry.Start(this, _method.Id, traceContext);
        }
    }

    /// <summary>Gives back the arguments of a call that will not run (refused after GoAway).</summary>
    internal void Abandon()
    {
        byte[]? arguments = _arguments;
        _arguments = null;
        if (arguments is not null && _argumentsRented)
        {
            ArrayPool<byte>.Shared.Return(arguments);
        }

        Interlocked.Exchange(ref _argumentsMessage, null)?.Release();
    }

    /// <summary>The call's id on its connection.</summary>
    public uint CallId { get; private set; }

    /// <summary>The id of the method being called.</summary>
    public uint MethodId => _method.Id;

    /// <summary>"Service.Method" of the method being called.</summary>
    public string MethodName => _method.Name;

    /// <summary>
    /// The call's <see cref="MuxCallContext"/> (its method, token and deadline), made on first use:
    /// a generated dispatcher asks for it only for a method that declares a
    /// <see cref="MuxCallContext"/> parameter. Valid until the handler's task completes.
    /// </summary>
    public MuxCallContext Context => _context ??= new MuxCallContext(this);

    /// <summary>The caller's deadline (its Request's deadline header, measured from the socket read
    /// that brought it) as a timestamp of <see cref="TimeProvider"/>; <see cref="long.MaxValue"/>
    /// when the caller sent none. Set by Start.</summary>
    internal long DeadlineTimestamp { get; private set; }

    /// <summary>The server's clock (<see cref="MuxServerOptions.TimeProvider"/>).</summary>
    internal TimeProvider TimeProvider => _connection.TimeProvider;

    /// <summary>Changes when the call finishes and when this object starts another call.</summary>
    internal uint Generation => Volatile.Read(ref _generation);

    /// <summary>
    /// Cancelled when the caller gives up (cancellation or timeout on the client), at the deadline
    /// the caller sent (see <see cref="MuxCallContext.Deadline"/>), when the connection is lost, or
    /// when the server stops without waiting for the call. Valid until the handler completes: the
    /// source behind it is then reset and reused for a later request.
    /// </summary>
    public CancellationToken CancellationToken => (Volatile.Read(ref _cancellation) ?? CreateCancellation()).Token;

    /// <summary>
    /// Reads the request's argument list (one MessagePack array) into <typeparamref name="TArguments"/>
    /// with the server's serializer options. A request whose arguments cannot be read fails with
    /// <see cref="MuxStatusCode.InvalidArguments"/>; the connection stays up.
    /// </summary>
    /// <typeparam name="TArguments">The method's argument list: generated code passes the struct it
    /// generated, whose formatter the generated resolver provides.</typeparam>
    /// <returns>The arguments.</returns>
    [EditorBrowsable(EditorBrowsableState.Never)]
    public TArguments ReadArguments<TArguments>()
    {
        try
        {
            return _argumentsMessage is { } message
                ? MessagePackSerializer.Deserialize<TArguments>(message.Payload, _serializerOptions)
                : MessagePackSerializer.Deserialize<TArguments>(_arguments.AsMemory(0, _argumentsLength), _serializerOptions);
        }
        catch (MessagePackSerializationException ex)
        {
            throw new InvalidArgumentsException($"The arguments of {MethodName} could not be read: {ex.GetBaseException().Message}", ex);
        }
    }

    /// <summary>Sends the result of a method returning <see cref="ValueTask{TResult}"/> once it completes.</summary>
    /// <typeparam name="T">The result type.</typeparam>
    /// <param name="result">What the service method returned.</param>
    /// <returns>A task that completes when the response has been handed to the connection.</returns>
    [EditorBrowsable(EditorBrowsableState.Never)] // Generated dispatchers call it.
    public ValueTask ReturnAsync<T>(ValueTask<T> result)
    {
        if (result.IsCompletedSuccessfully)
        {
            SendResult(result.Result);
            return ValueTask.CompletedTask;
        }

        return AwaitResultAsync(result);
    }

    /// <summary>Sends the result of a method returning <see cref="Task{TResult}"/> once it completes.</summary>
    /// <typeparam name="T">The result type.</typeparam>
    /// <param name="result">What the service method returned.</param>
    /// <returns>A task that completes when the response has been handed to the connection.</returns>
    [EditorBrowsable(EditorBrowsableState.Never)] // Generated dispatchers call it.
    public ValueTask ReturnAsync<T>(Task<T> result)
    {
        return result is null ? throw NullTask() : ReturnAsync(new ValueTask<T>(result));
    }

    /// <summary>Sends the (empty) result of a method returning <see cref="ValueTask"/> once it completes.</summary>
    /// <param name="result">What the service method returned.</param>
    /// <returns>A task that completes when the response has been handed to the connection.</returns>
    [EditorBrowsable(EditorBrowsableState.Never)] // Generated dispatchers call it.
    public ValueTask ReturnAsync(ValueTask result)
    {
        if (result.IsCompletedSuccessfully)
        {
            result.GetAwaiter().GetResult(); // Releases a pooled source, if any.
            SendResult(default(VoidResult));
            return ValueTask.CompletedTask;
        }

        return AwaitVoidAsync(result);
    }

    /// <summary>Sends the (empty) result of a method returning <see cref="Task"/> once it completes.</summary>
    /// <param name="result">What the service method returned.</param>
    /// <returns>A task that completes when the response has been handed to the connection.</returns>
    [EditorBrowsable(EditorBrowsableState.Never)] // Generated dispatchers call it.
    public ValueTask ReturnAsync(Task result)
    {
        return result is null ? throw NullTask() : ReturnAsync(new ValueTask(result));
    }

    private InvalidOperationException NullTask() => new($"{MethodName} returned a null Task; a service method must return a Task.");

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
        var body = new ResultBody<T>(value, _serializerOptions);
        _connection.SendResponse(this, ref body);
    }

    /// <summary>Runs the handler on the thread pool.</summary>
    void IThreadPoolWorkItem.Execute()
    {
        ValueTask pending;
        Activity? previous = _observed ? ServerCallTelemetry.EnterHandler(this) : null;

        // Only with propagation on and a deadline to pass on: setting the ambient context costs an
        // ExecutionContext per call. The handler's awaits capture it; this thread gets its own back.
        bool ambient = DeadlineTimestamp != long.MaxValue && _connection is ServerConnection { PropagatesCallContext: true };
        MuxCallContext? outer = ambient ? MuxCallContext.Enter(Context) : null;
        try
        {
            pending = _method.InvokeAsync(this);
        }
        catch (Exception ex)
        {
            Finish(ex);
            return;
        }
        finally
        {
            if (_observed)
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

    private void Finish(Exception? failure)
    {
        if (_observed)
        {
            ServerCallTelemetry.Stop(this, failure, IsCancellationRequested || (failure is not null && DeadlinePassed));
        }

        if (failure is not null)
        {
            _connection.SendFailure(this, failure);
        }

        byte[]? arguments = Interlocked.Exchange(ref _arguments, null);
        Debug.Assert(arguments is not null, "A call finishes once.");
        if (arguments is not null && _argumentsRented)
        {
            ArrayPool<byte>.Shared.Return(arguments);
        }

        Interlocked.Exchange(ref _argumentsMessage, null)?.Release();
        RecycleCancellation();
        Volatile.Write(ref _generation, _generation + 1);
        CloseStreams();

        // Last: from here on the connection may reuse this object for another request.
        _connection.OnCallFinished(this);
    }

    /// <summary>Keeps the handler's token source for the next request if no Cancel reached it, else
    /// disposes it. Once the claim below is made, RequestCancel does nothing for this request.</summary>
    private void RecycleCancellation()
    {
        bool cancelRequested = Interlocked.CompareExchange(ref _cancelRequested, 2, 0) != 0;
        CancellationTokenSource? cancellation = Volatile.Read(ref _cancellation);
        if (cancellation is null)
        {
            return;
        }

        // TryReset also drops the registrations the handler left on the token.
        if (!cancelRequested && cancellation.TryReset())
        {
            _spareCancellation = cancellation;
        }
        else
        {
            cancellation.Dispose();
        }
    }

    /// <summary>Gives the connection's call slot back, once per request.</summary>
    internal void ReleaseSlot()
    {
        if (Interlocked.Exchange(ref _slotReleased, 1) == 0)
        {
            _connection.ReleaseCallSlot();
        }
    }

    /// <summary>Whether the handler's token was cancelled (by the client or the connection).</summary>
    internal bool IsCancellationRequested => Volatile.Read(ref _cancelRequested) == 1;

    /// <summary>Whether the call carries a deadline and it has passed: by the clock, or the token
    /// fired with no cancel requested, which only the deadline timer does (a timer may fire a
    /// little before the clock's timestamp reaches the deadline).</summary>
    internal bool DeadlinePassed =>
        DeadlineTimestamp != long.MaxValue
        && (TimeProvider.GetTimestamp() >= DeadlineTimestamp
            || (Volatile.Read(ref _cancelRequested) == 0 && Volatile.Read(ref _cancellation) is { IsCancellationRequested: true }));

    /// <summary>Cancels the handler's token. Runs the token's callbacks on the thread pool, so a
    /// Cancel frame never runs user code on the reader loop.</summary>
    internal void RequestCancel()
    {
        if (Interlocked.CompareExchange(ref _cancelRequested, 1, 0) != 0)
        {
            return; // Requested already, or the call has finished.
        }

        CancelStreams();

        CancellationTokenSource? cancellation = Volatile.Read(ref _cancellation);
        if (cancellation is not null)
        {
            ThreadPool.UnsafeQueueUserWorkItem(static cts => CancelQuietly(cts), cancellation, preferLocal: false);
        }
    }

    private CancellationTokenSource CreateCancellation()
    {
        CancellationTokenSource created = Interlocked.Exchange(ref _spareCancellation, null) ?? NewCancellation();
        CancellationTokenSource? existing = Interlocked.CompareExchange(ref _cancellation, created, null);
        if (existing is not null)
        {
            created.Dispose();
            return existing;
        }

        // A Cancel that arrived before the source existed could not cancel it: do it now.
        if (Volatile.Read(ref _cancelRequested) == 1)
        {
            created.Cancel();
        }
        else if (DeadlineTimestamp != long.MaxValue)
        {
            // Only a handler that asks for its token gets a deadline timer, and a reused source
            // keeps its timer object (TryReset disarms it), so this allocates nothing once warm.
            CancelAtDeadline(created);
        }

        return created;
    }

    /// <summary>A source on the server's clock, so that a deadline set on it later
    /// (<see cref="CancelAtDeadline"/>) follows <see cref="MuxServerOptions.TimeProvider"/>.</summary>
    private CancellationTokenSource NewCancellation() =>
        TimeProvider == TimeProvider.System ? new CancellationTokenSource() : new CancellationTokenSource(Timeout.InfiniteTimeSpan, TimeProvider);

    private void CancelAtDeadline(CancellationTokenSource cancellation)
    {
        long now = TimeProvider.GetTimestamp();
        if (now >= DeadlineTimestamp)
        {
            cancellation.Cancel(); // Nothing is registered on it yet: runs no callback here.
        }
        else
        {
            // The header allows up to uint.MaxValue ms, one more than a timer takes; a deadline
            // that far away (about 49.7 days) is left unarmed rather than failing the handler.
            TimeSpan remaining = TimeProvider.GetElapsedTime(now, DeadlineTimestamp);
            if (remaining < s_longestTimer)
            {
                cancellation.CancelAfter(remaining);
            }
        }
    }

    private static void CancelQuietly(CancellationTokenSource cancellation)
    {
        try
        {
            cancellation.Cancel();
        }
        catch (ObjectDisposedException)
        {
            // The call finished first.
        }
    }
}
