namespace Mux;

/// <summary>
/// The remote side could not complete the call: usually the service method threw. The connection
/// stays up; only this call failed. A service method may throw it too, to choose the status code and
/// message its caller sees (for example
/// <c>throw new MuxRemoteException(MuxStatusCode.NotFound, $"No user {id}.")</c>); they are sent
/// whatever <see cref="MuxServerOptions.EnableDetailedErrors"/> says, so put nothing secret in them.
/// </summary>
public sealed class MuxRemoteException : Exception
{
    /// <summary>Creates an exception with a generic message.</summary>
    public MuxRemoteException()
        : this(MuxStatusCode.HandlerFailed, "The remote call failed.", null)
    {
    }

    /// <summary>Creates an exception for a handler failure with the given message.</summary>
    public MuxRemoteException(string message)
        : this(MuxStatusCode.HandlerFailed, message, null)
    {
    }

    /// <summary>Creates an exception for a handler failure with the given message and inner exception.</summary>
    public MuxRemoteException(string message, Exception innerException)
        : base(message, innerException)
    {
        StatusCode = MuxStatusCode.HandlerFailed;
    }

    /// <summary>Creates an exception with a status code and message, for a service method to throw.</summary>
    /// <param name="statusCode">Why the call failed (<see cref="MuxStatusCode.Ok"/> is sent as <see cref="MuxStatusCode.HandlerFailed"/>).</param>
    /// <param name="message">What the caller's exception says.</param>
    public MuxRemoteException(MuxStatusCode statusCode, string message)
        : this(statusCode, message, null)
    {
    }

    /// <summary>Creates an exception describing a remote failure.</summary>
    /// <param name="statusCode">Why the call failed.</param>
    /// <param name="message">The remote exception's message, or the server's description.</param>
    /// <param name="remoteExceptionType">The full type name of the exception the handler threw, if any.</param>
    public MuxRemoteException(MuxStatusCode statusCode, string message, string? remoteExceptionType)
        : base(message)
    {
        StatusCode = statusCode;
        RemoteExceptionType = remoteExceptionType;
    }

    /// <summary>Why the call failed.</summary>
    public MuxStatusCode StatusCode { get; }

    /// <summary>The full type name of the exception the remote handler threw (for example
    /// <c>System.InvalidOperationException</c>), or <see langword="null"/> when the failure was not an
    /// exception in the handler, or when it was but the server does not send details
    /// (<see cref="MuxServerOptions.EnableDetailedErrors"/> off, the default).</summary>
    public string? RemoteExceptionType { get; }
}
