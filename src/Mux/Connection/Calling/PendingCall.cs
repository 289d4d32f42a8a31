using System.Buffers;
using System.Diagnostics;
using Mux.Diagnostics;
using Mux.Protocol;
using Mux.Streaming;

namespace Mux.Connection;

/// <summary>
/// One call from its Request to its completion. Whoever removes it from the pending table records the outcome and queues
/// it to the thread pool, where it is deserialized and completed: the reader loop never runs a caller's continuation.
/// </summary>
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

    // The call is in the table before its Request is queued, so the expiry scan may fail it first; its Cancel must then
    // follow the Request, or the peer drops it and runs the call. Settled once by compare-and-swap between the caller
    // (NoteRequestQueued) and whoever gives up (MayCancelNow).
    private int _requestState;

    // Payloads up to this size are copied into an array the call keeps, larger ones into a rented one: many answers of a
    // few KB in flight would miss the shared pool. A pooled call keeps at most this much.
    private const int MaxOwnedPayload = 16 * 1024;

    // The outcome, written by the single remover before queueing and read by Execute: the Response
    // or Error payload (a Response in fragments taken over from the reader loop), or the failure.
    private CallOutcome _outcome;
    private ReceivedBytes _payload;
    private Exception? _exception;

    /// <summary>The call's span and duration: set before the Request is sent, ended before the caller's task completes.</summary>
    public CallTelemetry Telemetry;

    /// <summary>The call's streams when its method takes or returns one; set before the call starts.</summary>
    public CallStreams? Streams;

    /// <summary>The slot stripe of the caller's core, where the answer gives the slot back for its next take.</summary>
    public int SlotStripe;

    /// <summary>The connection-unique id; set before the call is published in the table.</summary>
    public uint CallId { get; set; }

    /// <summary>The method this call invokes, for error messages.</summary>
    public uint MethodId { get; private set; }

    /// <summary>When the call times out, and where that came from, for the timeout's message.</summary>
    public CallDeadline Deadline { get; private set; }

    /// <summary>The calls of the connection this call runs on, for cancellation and for reading its result.</summary>
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
    }

    /// <summary>Registers the caller's token. Called once, after the call is in the table.</summary>
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

    /// <summary>The caller queued the call's Request: false when the call was given up on before
    /// that, its Cancel left to the caller, which sends it now, after the Request.</summary>
    public bool NoteRequestQueued() =>
        Interlocked.CompareExchange(ref _requestState, RequestQueued, RequestUnsent) == RequestUnsent;

    /// <summary>The call is given up on (its remover asks, once): true when its Request is queued and
    /// its Cancel may go now; false leaves the Cancel to the caller, which sends it once the Request
    /// is queued (<see cref="NoteRequestQueued"/>), or never if the Request is never sent.</summary>
    public bool MayCancelNow() =>
        Interlocked.CompareExchange(ref _requestState, CancelOwed, RequestUnsent) != RequestUnsent;

    /// <summary>Records a Response or Error payload (copied out of the receive buffer, or taken
    /// over from <paramref name="receiver"/> when it arrived in fragments) and queues completion.
    /// Reader loop of <paramref name="receiver"/> only.</summary>
    public void CompleteWithPayload(CallOutcome outcome, in ReadOnlySequence<byte> payload, MuxConnection receiver)
    {
        Debug.Assert(outcome is CallOutcome.Response or CallOutcome.Error);
        _payload.Take(payload, MaxOwnedPayload, outcome == CallOutcome.Response ? receiver : null);
        _outcome = outcome;
        ThreadPool.UnsafeQueueUserWorkItem(this, preferLocal: false);
    }

    /// <summary>Records a failure (timeout, cancellation, connection loss) and queues completion.</summary>
    public void CompleteWithException(Exception exception)
    {
        _exception = exception;
        _outcome = CallOutcome.Failed;
        ThreadPool.UnsafeQueueUserWorkItem(this, preferLocal: false);
    }

    void IThreadPoolWorkItem.Execute()
    {
        if (Interlocked.Exchange(ref _registrationState, RegistrationReleased) == RegistrationActive)
        {
            // Waits for a cancellation callback that may be running, so it cannot touch this
            // object after it has been recycled for another call.
            _cancellation.Dispose();
        }

        // Read everything before completing: the caller's continuation may run inline, finish,
        // and return this object to its pool for another call before SetResult returns.
        ReceivedBytes payload = _payload.Detach();
        CallTelemetry telemetry = Telemetry;
        try
        {
            // The span ends before the caller's task completes, so that it never outlives the call
            // in the caller's view.
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

    /// <summary>Deserializes the result and completes the caller's task (or fails it with the
    /// serializer's exception).</summary>
    protected abstract void SetResultFromPayload(in ReadOnlySequence<byte> payload);

    protected abstract void SetException(Exception exception);
}

/// <summary>What ended a call; written by its single remover.</summary>
internal enum CallOutcome : byte
{
    None,
    Response,
    Error,
    Failed,
}
