using System.Buffers;
using System.Diagnostics;
using MessagePack;
using Mux.Diagnostics;

namespace Mux.Connection;

/// <summary>
/// One call being served, on either side (a server's call from its client, or a client's call
/// from its server): its arguments, its cancellation token and deadline, and the way back to the
/// caller. The handler sees it as <see cref="MuxServerCall"/> (<see cref="Public"/>), whose
/// generated dispatcher reads the arguments, invokes the service and hands the result to one of
/// the <c>ReturnAsync</c> methods. Runs on the thread pool, never on the connection's reader loop,
/// so a slow handler delays only its own call. Pooled by its <see cref="IncomingCalls"/>: once the
/// handler's task completes, the object serves a later request of the same connection (the
/// <see cref="CancellationToken"/> a handler took is its own call's, and may be kept).
/// </summary>
internal sealed partial class IncomingCall : IThreadPoolWorkItem, ICallTableEntry
{
    // Arguments up to this size are copied into the array _arguments keeps across the lives of
    // this pooled object; larger ones into an array rented for the call. Small, because a
    // connection keeps as many calls as it ever ran at once (up to its call cap).
    private const int MaxOwnedArguments = 1024;

    // The longest delay CancellationTokenSource.CancelAfter accepts (uint.MaxValue - 1 ms).
    private static readonly TimeSpan s_longestTimer = TimeSpan.FromMilliseconds(uint.MaxValue - 1);

    // The deadline timer's callback (see _deadlineTimer): one delegate for every call object.
    private static readonly TimerCallback s_onDeadline = static state => ((IncomingCall)state!).OnDeadline();

    // The serving role of the connection the call arrived on: where its answer goes, and where the
    // object returns when the call has finished. Immutable.
    private readonly IncomingCalls _calls;

    // The method being called. Set by Start on the reader loop before the call is queued.
    private ServiceMethod _method = null!;

    // The request's bytes (its metadata section, if any, then its MessagePack arguments). Taken
    // by Start; given back by ReleaseArguments.
    private ReceivedBytes _arguments;

    // The handler's token source: created on first use of CancellationToken (most handlers never
    // ask), one per call and never reused, because a handler may keep its token after its call (in
    // work it left running) and a reused source would fire that token for a later call. Installed
    // only via CompareExchange; disposed by Finish; reset to null by Start.
    private CancellationTokenSource? _cancellation;

    // 0 while the call runs, 1 once a cancel was requested (even before _cancellation existed),
    // 2 once Finish has claimed it: a Cancel read after that finds the call done and does nothing.
    // Reset to 0 by Start.
    private int _cancelRequested;

    // The deadline timer of the calls this object serves, on the server's clock: created for the
    // first call that asks for its token and carries a deadline, then armed per such call and
    // disarmed by Finish, so that a token's deadline costs no timer object per call (a source's own
    // CancelAfter would allocate one each time). Its callback may run late, for a call that has
    // finished: OnDeadline checks the deadline of the call being served against the clock.
    private ITimer? _deadlineTimer;

    // The caller's deadline (see DeadlineTimestamp). Written by Start before it bumps _generation;
    // read by the handler's side, and by OnDeadline on any thread.
    private long _deadlineTimestamp;

    // Whether _deadlineTimer is armed for the current call. Set by CreateCancellation, cleared by
    // Finish: both on the handler's side of the call.
    private bool _deadlineArmed;

    // While the handler completes asynchronously: its task, and the continuation that finishes the
    // call (created once per pooled object). Set by Execute before the continuation is registered;
    // read and cleared by OnHandlerCompleted.
    private ValueTask _pendingHandler;
    private Action? _onHandlerCompleted;

    // 1 once this call has given back its connection's call slot: just before its answer is
    // queued, or when it is retired without one. Exchanged by whichever of those comes first; reset
    // by Start.
    private int _slotReleased;

    // Whether the call's Response has gone out: a failure after it (an activator that throws once
    // its handler has answered) is logged, never sent as a second answer. Set by SendResultNow and
    // read by Finish, both on the handler's side; reset by Start.
    private bool _answered;

    // Bumped by Start and by Finish, so a MuxCallContext made during one call can tell that its
    // call is over (this object is then reused). Written by the call's own owner of the moment
    // (reader loop in Start, handler side in Finish); read by any thread holding a context.
    private uint _generation;

    // The context a handler asked for (Context), made once per call; reset by Start.
    private MuxCallContext? _context;

    /// <summary>The call's span and duration (<see cref="CallTelemetry"/>): started with the
    /// call when someone listens, stopped by Finish. Touched only by whoever owns the call at the
    /// moment (its setup, then its handler's side).</summary>
    internal CallTelemetry Telemetry;

    public IncomingCall(IncomingCalls calls)
    {
        _calls = calls;
        Public = new MuxServerCall(this);
    }

    /// <summary>What the handler and its generated dispatcher see of this call; one per pooled
    /// object, made with it. Immutable.</summary>
    public MuxServerCall Public { get; }

    /// <summary>The connection the call arrived on (for MuxRemoteClient: the client to call back).</summary>
    public MuxConnection Connection => _calls.Connection;

    // What the arguments are read and the answer written with.
    private MessagePackSerializerOptions SerializerOptions => _calls.Connection.SerializerOptions;

    /// <summary>The next call in the connection's pool of finished calls; only the pool touches it.</summary>
    public IncomingCall? NextPooled;

    /// <summary>Prepares this (new or reused) object for a request. Reader loop only, before the
    /// call is published anywhere. <paramref name="hasMetadata"/>: the request's bytes start with a
    /// metadata section (FrameFlags.Metadata), which Execute reads.</summary>
    internal void Start(uint callId, ServiceMethod method, in ReadOnlySequence<byte> arguments, long deadlineTimestamp, bool hasMetadata = false)
    {
        _method = method;
        StartPipeline(hasMetadata);
        CallId = callId;
        _deadlineTimestamp = deadlineTimestamp;
        _context = null;
        Volatile.Write(ref _generation, _generation + 1);

        // In this order: a context of the previous call that creates a source late (see
        // MuxCallContext.CancellationToken) and installs it after the null then sees this call's
        // state and deadline, as this call's handler would.
        _cancelRequested = 0;
        Volatile.Write(ref _cancellation, null);
        _slotReleased = 0;
        _answered = false;
        ResetStreams();
        _arguments.Take(arguments, MaxOwnedArguments, Connection);
    }

    /// <summary>Gives back the request's bytes: when the call finishes, or when it will not run
    /// (refused after GoAway).</summary>
    internal void ReleaseArguments() => _arguments.Release();

    /// <summary>The call's id on its connection. Set by Start.</summary>
    public uint CallId { get; private set; }

    public uint MethodId => _method.Id;

    /// <summary>"Service.Method" of the method being called.</summary>
    public string MethodName => _method.Name;

    /// <summary>The call's context (see <see cref="MuxServerCall.Context"/>), made on first use.</summary>
    public MuxCallContext Context => _context ??= new MuxCallContext(this);

    /// <summary>The caller's deadline (its Request's deadline header, measured from the socket read
    /// that brought it) as a timestamp of <see cref="TimeProvider"/>; <see cref="long.MaxValue"/>
    /// when the caller sent none. Set by Start.</summary>
    internal long DeadlineTimestamp => _deadlineTimestamp;

    /// <summary>The serving side's clock (its options' TimeProvider).</summary>
    internal TimeProvider TimeProvider => Connection.TimeProvider;

    /// <summary>Changes when the call finishes and when this object starts another call.</summary>
    internal uint Generation => Volatile.Read(ref _generation);

    /// <summary>The handler's token (see <see cref="MuxServerCall.CancellationToken"/>): a source
    /// of this call's own, made on first use.</summary>
    public CancellationToken CancellationToken => (Volatile.Read(ref _cancellation) ?? CreateCancellation()).Token;

    private void Finish(Exception? failure)
    {
        // A failure's status is the one its Error frame carries: telemetry reports what the caller is told.
        MuxStatusCode status = failure is null ? MuxStatusCode.Ok : _calls.SendFailure(this, failure);
        if (Telemetry.IsStarted)
        {
            Telemetry.Stop(failure, status);
            Telemetry = default; // Stopped once: the pooled call holds no span past its call.
        }

        Debug.Assert(_arguments.IsHeld, "A call finishes once.");
        ReleaseArguments();
        ReleaseCancellation();
        Volatile.Write(ref _generation, _generation + 1);
        CloseStreams();

        // Last: from here on the connection may reuse this object for another request.
        _calls.OnCallFinished(this);
    }

    /// <summary>Ends the handler's token with its call. Once the claim below is made, RequestCancel
    /// does nothing for this request; the deadline timer is disarmed, and disposing the source
    /// drops the registrations the handler left, so a token kept past the call never fires. A
    /// Cancel queued just before, or a timer callback already on its way, finds the source
    /// disposed (CancelQuietly).</summary>
    private void ReleaseCancellation()
    {
        Interlocked.CompareExchange(ref _cancelRequested, 2, 0);
        if (_deadlineArmed)
        {
            _deadlineArmed = false;
            _deadlineTimer!.Change(Timeout.InfiniteTimeSpan, Timeout.InfiniteTimeSpan);
        }

        Volatile.Read(ref _cancellation)?.Dispose();
    }

    /// <summary>Gives the connection's call slot back, once per request.</summary>
    internal void ReleaseSlot()
    {
        if (Interlocked.Exchange(ref _slotReleased, 1) == 0)
        {
            _calls.ReleaseSlot();
        }
    }

    /// <summary>Whether the call's Response has been sent (see _answered).</summary>
    internal bool IsAnswered => _answered;

    /// <summary>Whether the handler's token was cancelled (by the client or the connection).</summary>
    internal bool IsCancellationRequested => Volatile.Read(ref _cancelRequested) == 1;

    /// <summary>Whether the call carries a deadline and it has passed: by the clock, or the token
    /// fired with no cancel requested, which only the deadline timer does (a timer may fire a
    /// little before the clock's timestamp reaches the deadline).</summary>
    internal bool DeadlinePassed =>
        DeadlineTimestamp != long.MaxValue
        && (TimeProvider.GetTimestamp() >= DeadlineTimestamp
            || (Volatile.Read(ref _cancelRequested) == 0 && Volatile.Read(ref _cancellation) is { IsCancellationRequested: true }));

    /// <summary>Cancels the handler's token. From a Cancel frame or a close, its callbacks run on the
    /// thread pool (never user code on the reader loop), once. From the handler's own thread
    /// (<paramref name="inline"/>), at once, even if a cancel the close queued has not run yet.</summary>
    internal void RequestCancel(bool inline = false)
    {
        if (Interlocked.CompareExchange(ref _cancelRequested, 1, 0) == 0)
        {
            CancelStreams();
        }
        else if (!inline)
        {
            return; // Requested already, or the call has finished.
        }

        CancellationTokenSource? cancellation = Volatile.Read(ref _cancellation);
        if (inline && cancellation is not null)
        {
            CancelQuietly(cancellation, Connection);
        }
        else if (cancellation is not null)
        {
            ThreadPool.UnsafeQueueUserWorkItem(static state => CancelQuietly(state.Cancellation, state.Connection), (Cancellation: cancellation, Connection), preferLocal: false);
        }
    }

    private CancellationTokenSource CreateCancellation()
    {
        // A source per call that asks (48 B; its deadline timer more), never a reused one: see
        // _cancellation. Methods without a CancellationToken parameter never get here.
        CancellationTokenSource created = new(); // Its deadline is this object's timer (CancelAtDeadline), not one of its own.
        CancellationTokenSource? existing = Interlocked.CompareExchange(ref _cancellation, created, null);
        if (existing is not null)
        {
            created.Dispose();
            return existing;
        }

        int state = Volatile.Read(ref _cancelRequested);
        if (state == 1)
        {
            // A Cancel that arrived before the source existed could not cancel it: do it now.
            created.Cancel();
        }
        else if (state == 0 && DeadlineTimestamp != long.MaxValue)
        {
            // Only a handler that asks for its token gets its deadline armed (not once the call has
            // finished: nothing would ever read the token).
            CancelAtDeadline(created);
        }

        return created;
    }

    private void CancelAtDeadline(CancellationTokenSource cancellation)
    {
        long now = TimeProvider.GetTimestamp();
        if (now >= DeadlineTimestamp)
        {
            cancellation.Cancel(); // Nothing is registered on it yet: runs no callback here.
            return;
        }

        // The header allows up to uint.MaxValue ms, one more than a timer takes; a deadline that far
        // away (about 49.7 days) is left unarmed rather than failing the handler.
        TimeSpan remaining = TimeProvider.GetElapsedTime(now, DeadlineTimestamp);
        if (remaining < s_longestTimer)
        {
            (_deadlineTimer ??= CreateDeadlineTimer()).Change(remaining, Timeout.InfiniteTimeSpan);
            _deadlineArmed = true;
        }
    }

    private ITimer CreateDeadlineTimer()
    {
        // Created inside a handler: without this, every later callback would run in the execution
        // context (the AsyncLocals) of that first handler. Also where the handler has suppressed the
        // flow already: since .NET 8, SuppressFlow then returns a control whose Undo does nothing.
        using (ExecutionContext.SuppressFlow())
        {
            return TimeProvider.CreateTimer(s_onDeadline, this, Timeout.InfiniteTimeSpan, Timeout.InfiniteTimeSpan);
        }
    }

    /// <summary>The deadline timer fired. It may fire late, for a call that has finished (Finish's
    /// disarm came too late to stop it) while this object serves another: so it cancels only the
    /// source of the call running now, and only once the clock says that call's own deadline has
    /// passed; earlier, it re-arms for what remains, never over the arm of a call started since.</summary>
    private void OnDeadline()
    {
        // Read between two reads of the generation, which Start and Finish bump: unchanged, the
        // source and the deadline are one running call's. Changed, a call started or finished
        // meanwhile, and a call that starts arms the timer itself if it needs it.
        uint generation = Volatile.Read(ref _generation);
        CancellationTokenSource? cancellation = Volatile.Read(ref _cancellation);
        long deadline = Volatile.Read(ref _deadlineTimestamp);
        bool finished = Volatile.Read(ref _cancelRequested) == 2;
        if (cancellation is null || deadline == long.MaxValue || finished || Volatile.Read(ref _generation) != generation)
        {
            return;
        }

        long now = TimeProvider.GetTimestamp();
        if (now >= deadline)
        {
            CancelQuietly(cancellation, Connection);
            return;
        }

        // Early (a timer's granularity is coarser than the clock's) or for an earlier call: wait for
        // the rest, in whole milliseconds so that an early fire cannot spin.
        TimeSpan remaining = TimeSpan.FromMilliseconds(Math.Ceiling(TimeProvider.GetElapsedTime(now, deadline).TotalMilliseconds));
        if (remaining < s_longestTimer)
        {
            _deadlineTimer?.Change(remaining, Timeout.InfiniteTimeSpan);
        }

        // If the call read above finished since, and the next one armed the timer for its own
        // deadline before this re-arm, this re-arm replaced that arm (a later deadline put the next
        // call's off): then look again, for the call running now. The fence orders the re-arm before
        // the read: with the generation unchanged, a next call's arm comes after this re-arm.
        Interlocked.MemoryBarrier();
        if (Volatile.Read(ref _generation) != generation)
        {
            OnDeadline();
        }
    }

    /// <summary>Cancels a handler's token, off the handler's path (a thread-pool item, the deadline
    /// timer) or on it: a callback the handler registered that throws is its own failure, logged,
    /// and must not escape here, where it would crash the process or break the close.</summary>
    private static void CancelQuietly(CancellationTokenSource cancellation, MuxConnection connection)
    {
        try
        {
            cancellation.Cancel();
        }
        catch (ObjectDisposedException)
        {
            // The call finished first.
        }
        catch (AggregateException ex)
        {
            ServingLog.CancellationCallbackFailed(connection.Logger, connection.Name, ex);
        }
    }
}
