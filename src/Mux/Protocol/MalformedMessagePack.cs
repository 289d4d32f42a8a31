using MessagePack;

namespace Mux.Protocol;

/// <summary>
/// Besides its own exception, MessagePack's reader throws <see cref="OverflowException"/> for an integer too large for
/// its type and <see cref="EndOfStreamException"/> or <see cref="ArgumentOutOfRangeException"/> for a length past the
/// buffer: each means the peer sent a malformed body.
/// </summary>

internal static class MalformedMessagePack
{
    public static bool IsReadFailure(Exception exception) =>
        exception is MessagePackSerializationException or EndOfStreamException or OverflowException or ArgumentOutOfRangeException;
}
