using System.Buffers;
using System.Diagnostics;
using MessagePack;
using Mux.Diagnostics;

namespace Mux.Connection;

/// <summary>One call being served, on either side: its arguments, token, deadline and the way back. The handler sees it as
/// <see cref="MuxServerCall"/> and runs on the thread pool, never on the reader loop. Pooled by its <see cref="IncomingCalls"/>:
/// once the handler's task completes, the object serves a later request.</summary>
internal sealed partial class IncomingCall : IThreadPoolWorkItem, ICallTableEntry
{
    // Arguments up to this size are copied into an array the object keeps, larger ones into a rented one; small, as objects are pooled.
    private const int MaxOwnedArguments = 1024;

    // The longest delay CancellationTokenSource.CancelAfter accepts (uint.MaxValue - 1 ms).
    private static readonly TimeSpan s_longestTimer = TimeSpan.FromMilliseconds(uint.MaxValue - 1);

    private static readonly TimerCallback s_onDeadline = static state => ((IncomingCall)state!).OnDeadline();

    // The serving role the call arrived on: where its answer goes and where the object returns. Immutable.
    private readonly IncomingCalls _calls;

    // Set by Start on the reader loop before the call is queued.
    private ServiceMethod _method = null!;

    // The request's bytes (its metadata section, if any, then its arguments). Taken by Start; given back by ReleaseArguments.
    private ReceivedBytes _arguments;

    // Made on first use, one per call, never reused: a handler may keep its token past its call. Installed by CAS, disposed by Finish.
    private CancellationTokenSource? _cancellation;

    // 0 running, 1 cancel requested (even before _cancellation existed), 2 claimed by Finish (a later Cancel does nothing).
    private int _cancelRequested;

    // One timer for every call this object serves, where CancelAfter would allocate one per call. It may fire late: see OnDeadline.
    private ITimer? _deadlineTimer;

    // Written by Start before it bumps _generation; read by the handler's side, and by OnDeadline on any thread.
    private long _deadlineTimestamp;

    // Whether _deadlineTimer is armed for the current call. Handler's side only: set by CreateCancellation, cleared by Finish.
    private bool _deadlineArmed;

    // A handler completing asynchronously, and its continuation (one per object). Set by Execute; cleared by OnHandlerCompleted.
    private ValueTask _pendingHandler;
    private Action? _onHandlerCompleted;

    // 1 once the call gave back its call slot (just before its answer is queued, or retired without one). Reset by Start.
    private int _slotReleased;

    // Whether the Response has gone out: a failure after it is logged, never sent as a second answer. Handler's side.
    private bool _answered;

    // Bumped by Start and Finish, so a MuxCallContext kept past its call sees it is over; read by any thread holding one.
    private uint _generation;

    // The context a handler asked for, made once per call; reset by Start.
    private MuxCallContext? _context;

    // Started with the call when someone listens, stopped by Finish; touched only by the call's owner of the moment.
    internal CallTelemetry Telemetry;

    public IncomingCall(IncomingCalls calls)
    {
        _calls = calls;
        Public = new MuxServerCall(this);
    }

    public MuxServerCall Public { get; }

    public MuxConnection Connection => _calls.Connection;

    private MessagePackSerializerOptions SerializerOptions => _calls.Connection.SerializerOptions;

    // The next call in the pool of finished calls; only IncomingCallPool touches it.
    public IncomingCall? NextPooled;

    /// <summary>Prepares this object for a request. Reader loop only, before the call is published anywhere.</summary>
    internal void Start(uint callId, ServiceMethod method, in ReadOnlySequence<byte> arguments, long deadlineTimestamp, bool hasMetadata = false)
    {
        _method = method;
        StartPipeline(hasMetadata);
        CallId = callId;
        _deadlineTimestamp = deadlineTimestamp;
        _context = null;
        Volatile.Write(ref _generation, _generation + 1);

        // In this order: a previous call's context that installs a source late (MuxCallContext.CancellationToken), after the
        // null, sees this call's state and deadline, as this call's handler would.
        _cancelRequested = 0;
        Volatile.Write(ref _cancellation, null);
        _slotReleased = 0;
        _answered = false;
        ResetStreams();
        _arguments.Take(arguments, MaxOwnedArguments, Connection);
    }

    internal void ReleaseArguments() => _arguments.Release();

    public uint CallId { get; private set; }

    public uint MethodId => _method.Id;

    public string MethodName => _method.Name;

    public MuxCallContext Context => _context ??= new MuxCallContext(this);

    /// <summary>The caller's deadline on <see cref="TimeProvider"/>, from the read that brought it; long.MaxValue for none.</summary>
    internal long DeadlineTimestamp => _deadlineTimestamp;

    internal TimeProvider TimeProvider => Connection.TimeProvider;

    /// <summary>Changes when the call finishes and when this object starts another call.</summary>
    internal uint Generation => Volatile.Read(ref _generation);

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

    /// <summary>After the claim, RequestCancel does nothing; disposing the source drops the handler's registrations, so a token
    /// kept past the call never fires. A Cancel or timer callback already on its way finds the source disposed.</summary>
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

    internal void ReleaseSlot()
    {
        if (Interlocked.Exchange(ref _slotReleased, 1) == 0)
        {
            _calls.ReleaseSlot();
        }
    }

    internal bool IsAnswered => _answered;

    internal bool IsCancellationRequested => Volatile.Read(ref _cancelRequested) == 1;

    /// <summary>By the clock, or by the token firing with no cancel requested, which only the (perhaps early) timer does.</summary>
    internal bool DeadlinePassed =>
        DeadlineTimestamp != long.MaxValue
        && (TimeProvider.GetTimestamp() >= DeadlineTimestamp
            || (Volatile.Read(ref _cancelRequested) == 0 && Volatile.Read(ref _cancellation) is { IsCancellationRequested: true }));

    /// <summary>Cancels the handler's token once, its callbacks on the thread pool (never user code on the reader loop); from the
    /// handler's own thread (<paramref name="inline"/>), at once, even if a cancel the close queued has not run yet.</summary>
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
            ThreadPool.UnsafeQueueUserWorkItem(
                static state => CancelQuietly(state.Cancellation, state.Connection), (Cancellation: cancellation, Connection), preferLocal: false);
        }
    }

    private CancellationTokenSource CreateCancellation()
    {
        // Never a reused source (see _cancellation). Its deadline is this object's timer (CancelAtDeadline), not its own.
        CancellationTokenSource created = new();
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
            // Armed only for a handler that asks for its token, and not once the call has finished: nobody would read it.
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

        // The header allows uint.MaxValue ms, one more than a timer takes: a deadline that far (49.7 days) is left unarmed.
        TimeSpan remaining = TimeProvider.GetElapsedTime(now, DeadlineTimestamp);
        if (remaining < s_longestTimer)
        {
            (_deadlineTimer ??= CreateDeadlineTimer()).Change(remaining, Timeout.InfiniteTimeSpan);
            _deadlineArmed = true;
        }
    }

    private ITimer CreateDeadlineTimer()
    {
        // Made inside a handler, whose AsyncLocals every later callback would see otherwise (.NET 8+: safe if suppressed already).
        using (ExecutionContext.SuppressFlow())
        {
            return TimeProvider.CreateTimer(s_onDeadline, this, Timeout.InfiniteTimeSpan, Timeout.InfiniteTimeSpan);
        }
    }

    /// <summary>Perhaps late, for a call that has finished: cancels only the running call, once the clock passes its deadline;
    /// earlier, re-arms for the rest, never over the arm of a call started since.</summary>
    private void OnDeadline()
    {
        // Read between two reads of the generation, which Start and Finish bump: unchanged, the source and the deadline are
        // one running call's; changed, a call started or finished meanwhile, and a call that starts arms the timer itself.
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

        // Early (a timer is coarser than the clock) or for an earlier call: wait for the rest, in whole ms so it cannot spin.
        TimeSpan remaining = TimeSpan.FromMilliseconds(Math.Ceiling(TimeProvider.GetElapsedTime(now, deadline).TotalMilliseconds));
        if (remaining < s_longestTimer)
        {
            _deadlineTimer?.Change(remaining, Timeout.InfiniteTimeSpan);
        }

        // If the call read above finished since, and the next one armed the timer for its own deadline before this re-arm,
        // this re-arm replaced that arm: look again, for the call running now. The fence orders the re-arm before the read:
        // with the generation unchanged, a next call's arm comes after this re-arm.
        Interlocked.MemoryBarrier();
        if (Volatile.Read(ref _generation) != generation)
        {
            OnDeadline();
        }
    }

    // A callback the handler registered that throws is its own failure, logged: escaping here, it could crash the process.
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
            ConnectionLog.CancellationCallbackFailed(connection.Logger, connection.Name, ex);
        }
    }
}
