namespace Mux;

/// <summary>
/// The connection a call was using is gone, was refused, or could not be established. Every call
/// still pending on that connection fails with this exception; <see cref="Exception.InnerException"/>
/// keeps the transport or protocol fault that caused it.
/// </summary>
public sealed class MuxConnectionException : Exception
{
    /// <summary>Creates an exception with a generic message.</summary>
    public MuxConnectionException()
        : this("The Mux connection is not available.")
    {
    }

    /// <summary>Creates an exception with the given message.</summary>
    public MuxConnectionException(string message)
        : base(message)
    {
    }

    /// <summary>Creates an exception with the given message and the fault that caused it.</summary>
    public MuxConnectionException(string message, Exception? innerException)
        : base(message, innerException)
    {
    }

    /// <summary>Creates an exception that records why the connection closed.</summary>
    public MuxConnectionException(string message, MuxCloseReason reason, Exception? innerException)
        : base(message, innerException)
    {
        Reason = reason;
    }

    /// <summary>Why the connection closed; <see cref="MuxCloseReason.None"/> when it never opened.</summary>
    public MuxCloseReason Reason { get; }

    /// <summary>
    /// Whether the server provably never ran the call: its request was never sent, or the server's
    /// GoAway said it had not received it. Retrying such a call cannot run it twice, and
    /// <see cref="MuxClient"/> does so by itself when <see cref="MuxClientOptions.AutoReconnect"/> and
    /// <see cref="MuxClientOptions.WaitForConnection"/> (or the proxy's <see cref="MuxCallOptions.WaitForConnection"/>) are on;
    /// a call that fails with <see langword="false"/> here may or may not have run.
    /// </summary>
    public bool IsSafeToRetry { get; private init; }

    /// <summary>The same failure, marked as one the server never ran.</summary>
    internal static MuxConnectionException NotRun(string message, MuxCloseReason reason, Exception? innerException) =>
        new(message, reason, innerException) { IsSafeToRetry = true };
}
