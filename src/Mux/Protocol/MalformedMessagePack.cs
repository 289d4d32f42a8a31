using MessagePack;

namespace Mux.Protocol;

/// <summary>
/// What MessagePack's reader throws for bytes that are not what they claim: besides its own exception, an integer that
/// does not fit the type read (<see cref="OverflowException"/>), or a length that runs past the buffer
/// (<see cref="EndOfStreamException"/>, or <see cref="ArgumentOutOfRangeException"/> from skipping). Each means the peer
/// sent a malformed body.
/// </summary>
internal static class MalformedMessagePack
{
    public static bool IsReadFailure(Exception exception) =>
        exception is MessagePackSerializationException or EndOfStreamException or OverflowException or ArgumentOutOfRangeException;
}
