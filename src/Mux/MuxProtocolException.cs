namespace Mux;

/// <summary>
/// The peer sent bytes that break the Mux wire protocol (docs/protocol.md). The connection that
/// received them is closed; callers see it as the inner exception of a <see cref="MuxConnectionException"/>.
/// </summary>
public sealed class MuxProtocolException : Exception
{
    /// <summary>Creates an exception with a generic message.</summary>
    public MuxProtocolException()
        : base("The peer violated the Mux protocol.")
    {
    }

    /// <summary>Creates an exception with the given message.</summary>
    public MuxProtocolException(string message)
        : base(message)
    {
    }

    /// <summary>Creates an exception with the given message and inner exception.</summary>
    public MuxProtocolException(string message, Exception innerException)
        : base(message, innerException)
    {
    }
}
