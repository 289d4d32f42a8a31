using MessagePack;

namespace Mux.Protocol;

/// <summary>Implemented by structs passed by generic type, so writing a frame neither boxes nor allocates a delegate.</summary>

internal interface IFrameBody
{
    void Write(ref MessagePackWriter writer);
}
