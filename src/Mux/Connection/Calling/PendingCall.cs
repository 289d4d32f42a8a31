using System.Buffers;
using System.Diagnostics;
using Mux.Diagnostics;
using Mux.Protocol;
using Mux.Streaming;

namespace Mux.Connection;

/// <summary>Whoever removes the call from the pending table records the outcome and queues it to the thread pool, where it is
/// deserialized and completed: the reader loop never runs a caller's continuation.</summary>
internal abstract class PendingCall : IThreadPoolWorkItem, ICallTableEntry
{
    private const int RegistrationNone = 0;
    private const int RegistrationActive = 1;
    private const int RegistrationReleased = 2;

    // The caller's token callback: disposed exactly once, by whichever of the caller and the completion comes second.
    private CancellationTokenRegistration _cancellation;
    private int _registrationState;

    private const int RequestUnsent = 0;
    private const int RequestQueued = 1;
    private const int CancelOwed = 2;

    // A call that found none of the peer's call slots free: linked into its connection's CallSlots queue (WaitingForSlot), then taken out either
    // to be sent by whoever freed a slot (Dequeued, then Sending while that sender queues its Request) or unsent (Unqueued: given up on, or the
    // slots failed). Only CallSlots moves a call into or out of WaitingForSlot, under its lock.
    private const int WaitingForSlot = 3;
    private const int Dequeued = 4;
    private const int Sending = 5;
    private const int Unqueued = 6;

    // Added to Dequeued or Sending by whoever completes the call meanwhile (an answer, a failure): the outcome is recorded, and the sender queues
    // the completion once it is done with the call, so the call cannot go back to its pool (and be rented again) under the sender's hands.
    private const int CompletedWhileSending = 8;

    // The call is in the table before its Request is queued, so the expiry scan may fail it first; its Cancel must then
    // follow the Request, or the peer drops it and runs the call. Settled once by compare-and-swap between the caller or
    // the sender of a waiting call (NoteRequestQueued, TryFinishSending) and whoever gives up (TakeGiveUpTurn).
    private int _requestState;

    // Payloads up to this size are copied into an array the call keeps, larger ones into a rented one: many answers of a
    // few KB in flight would miss the shared pool. A pooled call keeps at most this much.
    private const int MaxOwnedPayload = 16 * 1024;

    // Written by the single remover before queueing, read by Execute. A Response in fragments is taken over from the reader loop.
    private CallOutcome _outcome;
    private ReceivedBytes _payload;
    private Exception? _exception;

    /// <summary>The call's span and duration: set before the Request is sent, ended before the caller's task completes.</summary>
    public CallTelemetry Telemetry;

    /// <summary>Set before the call starts.</summary>
    public CallStreams? Streams;

    /// <summary>A waiting call's Request when it fits one frame; the buffer stays with the pooled call, so waiting allocates
    /// nothing. Written by the caller before the call is queued, then read only by its sender, or dropped unsent.</summary>
    public PooledBufferWriter? QueuedFrame;

    /// <summary>A waiting call's Request over the fragment size; owned as <see cref="QueuedFrame"/> is.</summary>
    public BufferSegment? QueuedMessage;

    public long QueuedMessageLength;

    /// <summary>The encoded Request carries a deadline header, which its sender brings up to date.</summary>
    public bool QueuedWithDeadline;

    /// <summary>Guarded by the CallSlots queue's lock; read after CallSlots.Fail by the one thread that failed it.</summary>
    public PendingCall? QueuePrevious;

    public PendingCall? QueueNext;

    /// <summary>Set before the call is published in the table.</summary>
    public uint CallId { get; set; }

    public uint MethodId { get; private set; }

    public CallDeadline Deadline { get; private set; }

    public OutgoingCalls? Calls { get; private set; }

    protected void Initialize(OutgoingCalls calls, uint methodId, in CallDeadline deadline)
    {
        Calls = calls;
        CallId = 0;
        MethodId = methodId;
        Deadline = deadline;
        _outcome = CallOutcome.None;
        _exception = null;
        _registrationState = RegistrationNone;
        _cancellation = default;
        _requestState = RequestUnsent;
        Telemetry = default;
        Streams = null;
        QueuedWithDeadline = false;
        QueuePrevious = null;
        QueueNext = null;
    }

    /// <summary>Called once, after the call is in the table.</summary>
    public void RegisterCancellation(CancellationToken cancellationToken)
    {
        CancellationTokenRegistration registration = cancellationToken.UnsafeRegister(
            static (state, token) => ((PendingCall)state!).OnCanceled(token), this);
        _cancellation = registration;
        if (Interlocked.CompareExchange(ref _registrationState, RegistrationActive, RegistrationNone) != RegistrationNone)
        {
            // The call completed while we were registering: the completion skipped disposal.
            registration.Dispose();
        }
    }

    private void OnCanceled(CancellationToken token) => Calls?.Cancel(this, token);

    /// <summary>False when the call was given up on first: its caller sends the Cancel now, after the Request.</summary>
    public bool NoteRequestQueued() =>
        Interlocked.CompareExchange(ref _requestState, RequestQueued, RequestUnsent) == RequestUnsent;

    /// <summary>Asked once by the remover, with the failure recorded.</summary>
    public GiveUpTurn TakeGiveUpTurn()
    {
        while (true)
        {
            int state = Volatile.Read(ref _requestState);
            switch (state)
            {
                case RequestUnsent:
                    if (Interlocked.CompareExchange(ref _requestState, CancelOwed, RequestUnsent) == RequestUnsent)
                    {
                        return GiveUpTurn.CancelAfterRequest;
                    }

                    break;
                case Dequeued or Sending:
                    if (Interlocked.CompareExchange(ref _requestState, state | CompletedWhileSending, state) == state)
                    {
                        return GiveUpTurn.LeftToSender;
                    }

                    break;
                default:
                    return GiveUpTurn.CancelNow;
            }
        }
    }

    public bool IsUnqueued => Volatile.Read(ref _requestState) == Unqueued;

    public bool IsWaitingForSlot => Volatile.Read(ref _requestState) == WaitingForSlot;

    /// <summary>Under the CallSlots lock: false when the expiry scan failed the call since its entry in the table.</summary>
    public bool TryMarkWaitingForSlot() =>
        Interlocked.CompareExchange(ref _requestState, WaitingForSlot, RequestUnsent) == RequestUnsent;

    public void MarkDequeued()
    {
        Debug.Assert(_requestState is WaitingForSlot or RequestUnsent);
        Volatile.Write(ref _requestState, Dequeued);
    }

    /// <summary>Out of the CallSlots queue unsent (under its lock), or failed by its sender first: never sent.</summary>
    public void MarkUnqueued() => Volatile.Write(ref _requestState, Unqueued);

    /// <summary>False when the call was completed meanwhile: it is not sent, and the sender queues the completion.</summary>
    public bool TryStartSending() =>
        Interlocked.CompareExchange(ref _requestState, Sending, Dequeued) == Dequeued;

    /// <summary>False when the call was completed meanwhile: the sender sends its Cancel if it failed, and queues the completion.</summary>
    public bool TryFinishSending() =>
        Interlocked.CompareExchange(ref _requestState, RequestQueued, Sending) == Sending;

    public bool HasFailed => _outcome == CallOutcome.Failed;

    public void DropQueuedRequest()
    {
        BufferSegmentPool.Shared.ReturnChain(QueuedMessage);
        QueuedMessage = null;
        ReleaseQueuedFrame();
    }

    /// <summary>A buffer that grew for a large frame is not kept with the pooled call.</summary>
    public void ReleaseQueuedFrame()
    {
        if (QueuedFrame is { } frame && frame.Buffer.Length > MaxOwnedPayload)
        {
            QueuedFrame = null;
            frame.Dispose();
        }
    }

    /// <summary>Reader loop of <paramref name="receiver"/> only, which hands over a payload that arrived in fragments.</summary>
    public void CompleteWithPayload(CallOutcome outcome, in ReadOnlySequence<byte> payload, MuxConnection receiver)
    {
        Debug.Assert(outcome is CallOutcome.Response or CallOutcome.Error);
        _payload.Take(payload, MaxOwnedPayload, outcome == CallOutcome.Response ? receiver : null);
        _outcome = outcome;
        if (!TryLeaveToSender())
        {
            QueueCompletion();
        }
    }

    public void CompleteWithException(Exception exception)
    {
        RecordFailure(exception);
        if (!TryLeaveToSender())
        {
            QueueCompletion();
        }
    }

    /// <summary>For <see cref="TakeGiveUpTurn"/> and then <see cref="QueueCompletion"/>.</summary>
    public void RecordFailure(Exception exception)
    {
        _exception = exception;
        _outcome = CallOutcome.Failed;
    }

    public void QueueCompletion() => ThreadPool.UnsafeQueueUserWorkItem(this, preferLocal: false);

    // A call whose sender is between taking it out of the queue and queueing its Request: its completion waits for the
    // sender (see CompletedWhileSending). One read for every other call.
    private bool TryLeaveToSender()
    {
        int state = Volatile.Read(ref _requestState);
        while (state is Dequeued or Sending)
        {
            int seen = Interlocked.CompareExchange(ref _requestState, state | CompletedWhileSending, state);
            if (seen == state)
            {
                return true;
            }

            state = seen;
        }

        return false;
    }

    void IThreadPoolWorkItem.Execute()
    {
        if (Interlocked.Exchange(ref _registrationState, RegistrationReleased) == RegistrationActive)
        {
            // Waits for a cancellation callback that may be running, so it cannot touch this object once it is recycled.
            _cancellation.Dispose();
        }

        // Read everything first: the caller's continuation may run inline and return this object to its pool before SetResult returns.
        ReceivedBytes payload = _payload.Detach();
        CallTelemetry telemetry = Telemetry;
        try
        {
            // The span ends before the caller's task completes, so it never outlives the call in the caller's view.
            switch (_outcome)
            {
                case CallOutcome.Response:
                    telemetry.Stop(null);
                    SetResultFromPayload(payload.Sequence);
                    break;
                case CallOutcome.Error:
                    ErrorBody error = ErrorBody.Read(payload.Memory);
                    var remote = new MuxRemoteException(error.Code, error.Message, error.RemoteType);
                    telemetry.Stop(remote);
                    SetException(remote);
                    break;
                default:
                    Exception failure = _exception ?? new InvalidOperationException("The call completed without an outcome.");
                    telemetry.Stop(failure);
                    SetException(failure);
                    break;
            }
        }
        finally
        {
            payload.Release();
        }
    }

    /// <summary>Completes the caller's task, or fails it with the serializer's exception.</summary>
    protected abstract void SetResultFromPayload(in ReadOnlySequence<byte> payload);

    protected abstract void SetException(Exception exception);
}

/// <summary>What whoever gives a call up does about its Cancel.</summary>
internal enum GiveUpTurn : byte
{
    /// <summary>Its Request is queued: send the Cancel, then complete the call.</summary>
    CancelNow,

    /// <summary>Its Request is not queued yet: complete the call; its caller sends the Cancel after the Request.</summary>
    CancelAfterRequest,

    /// <summary>A waiting call being sent: its sender completes it, after its Request and Cancel if it sent the Request.</summary>
    LeftToSender,
}

/// <summary>What ended a call; written by its single remover.</summary>
internal enum CallOutcome : byte
{
    None,
    Response,
    Error,
    Failed,
}
