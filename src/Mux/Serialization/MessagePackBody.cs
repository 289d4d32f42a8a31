using MessagePack;
using Mux.Protocol;

namespace Mux.Serialization;

/// <summary>A struct passed by generic type, so nothing boxes.</summary>

internal readonly struct MessagePackBody<T>(T value, MessagePackSerializerOptions options) : IFrameBody
{
    private readonly T _value = value;
    private readonly MessagePackSerializerOptions _options = options;

    // MessagePackSerializer (not the formatter directly) so that compression applies exactly as
    // MessagePackSerializer.Serialize would apply it: the body is the bytes it writes.
    public void Write(ref MessagePackWriter writer) => MessagePackSerializer.Serialize(ref writer, _value, _options);
}
