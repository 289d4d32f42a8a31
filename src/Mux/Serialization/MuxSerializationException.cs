namespace Mux.Serialization;

/// <summary>
/// Thrown when data is not valid MessagePack for the expected type, or when no formatter is
/// registered for a type that is being serialized or deserialized.
/// </summary>
public sealed class MuxSerializationException : Exception
{
    /// <summary>Creates an exception with a default message.</summary>
    public MuxSerializationException()
    {
    }

    /// <summary>Creates an exception with the given message.</summary>
    /// <param name="message">What went wrong.</param>
    public MuxSerializationException(string message)
        : base(message)
    {
    }

    /// <summary>Creates an exception with the given message and the exception that caused it.</summary>
    /// <param name="message">What went wrong.</param>
    /// <param name="innerException">The exception that caused this one.</param>
    public MuxSerializationException(string message, Exception innerException)
        : base(message, innerException)
    {
    }
}
