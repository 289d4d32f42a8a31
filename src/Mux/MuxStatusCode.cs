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

    /// <summary>The arguments, the metadata or an item of the caller's stream could not be read.</summary>
    InvalidArguments = 3,

    /// <summary>The handler observed cancellation (the caller cancelled, or the server is stopping).</summary>
    Canceled = 4,

    /// <summary>A stream item was larger than the receiving side's maximum frame size (stream items are never sent in
    /// fragments).</summary>
    FrameTooLarge = 5,

    /// <summary>Reserved: a Mux server that stops sends GoAway instead, and the client fails the calls it never ran with
    /// <see cref="MuxConnectionException"/> (<see cref="MuxConnectionException.IsSafeToRetry"/> true).</summary>
    ServerShuttingDown = 6,

    /// <summary>The peer broke the protocol (for example a bad handshake).</summary>
    ProtocolError = 7,

    /// <summary>The connection already ran <see cref="MuxServerOptions.MaxConcurrentCallsPerConnection"/> calls, so the
    /// server did not run this one. A Mux client waits for a free slot instead, so only one that ignores it sees this.</summary>
    TooManyCalls = 8,

    /// <summary>The handler reports that what the call names does not exist.</summary>
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

    /// <summary>The caller's deadline passed on the server, before or while the handler ran. A Mux client reports this
    /// as the <see cref="TimeoutException"/> of its own call.</summary>
    DeadlineExceeded = 14,

    /// <summary>A request or response was larger than the receiving side's
    /// <see cref="MuxConnectionOptions.MaxMessageSize"/>: only this call failed; the connection stays up.</summary>
    MessageTooLarge = 15,

    /// <summary>The server already ran <see cref="MuxServerOptions.MaxConcurrentCalls"/> calls, so it refused this one
    /// before its handler ran: it is safe to retry, best on another server. A Mux client retries it within its
    /// <see cref="MuxClientOptions.RetryBudget"/> and fails with this status when the budget is spent.</summary>

    Overloaded = 16,
}
