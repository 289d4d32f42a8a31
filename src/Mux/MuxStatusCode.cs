namespace Mux;

/// <summary>Why a call failed on the remote side; carried by <see cref="MuxRemoteException"/>.</summary>
public enum MuxStatusCode
{
    /// <summary>The call succeeded. Never carried by an exception.</summary>
    Ok = 0,

    /// <summary>The service method threw. The message and type name are the exception's when the server
    /// sets <see cref="MuxServerOptions.EnableDetailedErrors"/>; otherwise the message is generic.</summary>
    HandlerFailed = 1,

    /// <summary>The server has no method with the requested id (the client and server contracts differ).</summary>
    UnknownMethod = 2,

    /// <summary>The arguments could not be deserialized into the method's parameter types (nor the
    /// call's metadata, or an item of the stream the caller sent, be read).</summary>
    InvalidArguments = 3,

    /// <summary>The handler observed cancellation (the caller cancelled, or the server is stopping).</summary>
    Canceled = 4,

    /// <summary>A stream item was larger than the receiving side's maximum frame size (stream items
    /// are never sent in fragments; a larger request or response is, so it never fails this way).</summary>
    FrameTooLarge = 5,

    /// <summary>The server is shutting down and did not run the call; it is safe to retry elsewhere.
    /// Reserved: no Mux server of protocol version 2 sends it (one that stops sends GoAway, and the
    /// client fails the calls it never ran with <see cref="MuxConnectionException"/>,
    /// <see cref="MuxConnectionException.IsSafeToRetry"/> true).</summary>
    ServerShuttingDown = 6,

    /// <summary>The peer broke the protocol (for example a bad handshake).</summary>
    ProtocolError = 7,

    /// <summary>The connection already ran as many calls as the server allows
    /// (<see cref="MuxServerOptions.MaxConcurrentCallsPerConnection"/>, advertised in the handshake),
    /// so the server did not run this one. A Mux client waits for a free slot instead of sending,
    /// so only a client that ignores the advertised limit sees this.</summary>
    TooManyCalls = 8,

    /// <summary>The handler reports that what the call names does not exist (thrown as a
    /// <see cref="MuxRemoteException"/> by the handler).</summary>
    NotFound = 9,

    /// <summary>The handler reports that the caller may not do this.</summary>
    PermissionDenied = 10,

    /// <summary>The handler reports that the caller is not authenticated.</summary>
    Unauthenticated = 11,

    /// <summary>The handler reports that the system is not in a state the call needs (retrying the same
    /// call will not help until that changes).</summary>
    FailedPrecondition = 12,

    /// <summary>The handler reports a transient condition (a dependency is down); retrying later may succeed.</summary>
    Unavailable = 13,

    /// <summary>The caller's deadline passed on the server: the request arrived after it (the
    /// handler did not run), or the handler stopped when its token fired at it. A Mux client
    /// reports this as the <see cref="TimeoutException"/> of its own call.</summary>
    DeadlineExceeded = 14,

    /// <summary>A request or response was larger than the receiving side's
    /// <see cref="MuxConnectionOptions.MaxMessageSize"/>: only this call failed; the connection stays up.</summary>
    MessageTooLarge = 15,

    /// <summary>The server already ran as many calls as it allows at once across all its connections
    /// (<see cref="MuxServerOptions.MaxConcurrentCalls"/>), so it refused this one before its handler ran. The call never ran:
    /// it is safe to retry, best on another server. A Mux client retries it within its <see cref="MuxClientOptions.RetryBudget"/>
    /// and fails it with this status when the budget is spent (or when it has no budget).</summary>
    Overloaded = 16,
}
