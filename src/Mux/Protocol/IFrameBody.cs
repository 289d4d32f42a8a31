using MessagePack;

namespace Mux.Protocol;

/// <summary>
/// Writes the MessagePack body of a frame. Implemented by structs and passed by generic type so
/// that writing a frame neither boxes nor allocates a delegate.
/// </summary>
internal interface IFrameBody
{
    void Write(ref MessagePackWriter writer);
}
