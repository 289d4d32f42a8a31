using MessagePack;
using Mux.Protocol;

namespace Mux.Serialization;

/// <summary>A call's argument list as a Request body: the proxy's argument struct, written by its
/// generated formatter as one MessagePack array. A struct passed by generic type, so nothing boxes.</summary>
internal readonly struct ArgumentsBody<TArguments>(TArguments arguments, MessagePackSerializerOptions options) : IFrameBody
    where TArguments : struct
{
    private readonly TArguments _arguments = arguments;
    private readonly MessagePackSerializerOptions _options = options;

    // MessagePackSerializer (not the formatter directly) so that compression applies exactly as
    // MessagePackSerializer.Serialize would apply it: the body is the bytes it writes.
    public void Write(ref MessagePackWriter writer) => MessagePackSerializer.Serialize(ref writer, _arguments, _options);
}

/// <summary>A handler's result as a Response body.</summary>
internal readonly struct ResultBody<T>(T value, MessagePackSerializerOptions options) : IFrameBody
{
    private readonly T _value = value;
    private readonly MessagePackSerializerOptions _options = options;

    public void Write(ref MessagePackWriter writer) => MessagePackSerializer.Serialize(ref writer, _value, _options);
}
