
namespace Mux.Connection;

/// <summary>A frame we were about to send is larger than the peer accepts. Only that call fails.</summary>
internal sealed class FrameTooLargeException(string message) : InvalidOperationException(message)
{
}

/// <summary>A request's arguments do not match the method's parameters. Only that call fails.</summary>
internal sealed class InvalidArgumentsException(string message, Exception? innerException) : Exception(message, innerException)
{
}

/// <summary>A message is larger than the receiving side's MaxMessageSize (announced in its
/// handshake): nothing was sent, only that call fails.</summary>
internal sealed class MessageTooLargeException(string message) : InvalidOperationException(message)
{
}
