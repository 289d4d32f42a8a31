using Mux.Protocol;
using Mux.Serialization;

namespace Mux.Serialization;

/// <summary>Adapts a proxy's argument struct to a frame body without boxing.</summary>
internal readonly struct ArgumentsBody<TArguments>(TArguments arguments) : IFrameBody
    where TArguments : struct, IMuxArguments
{
    private readonly TArguments _arguments = arguments;

    public void Write(ref MessagePackWriter writer) => _arguments.Write(ref writer);
}

/// <summary>A handler's result as a Response body.</summary>
internal readonly struct ResultBody<T>(T value) : IFrameBody
{
    private readonly T _value = value;

    public void Write(ref MessagePackWriter writer) => MuxFormatterResolver.GetFormatter<T>().Serialize(ref writer, _value);
}
