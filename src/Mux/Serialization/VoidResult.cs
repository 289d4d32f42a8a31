using MessagePack;
using MessagePack.Formatters;

namespace Mux.Serialization;

/// <summary>The "result" of a call that returns nothing: a Response whose body is nil.</summary>
internal readonly struct VoidResult
{
    /// <summary>A call without a result that went the way of a call with one (a wait for a
    /// connection, a slot, or the interceptors; a void caller-streaming call), its nil result dropped.</summary>
    public static async ValueTask Ignore(ValueTask<VoidResult> call) => await call.ConfigureAwait(false);
}

internal sealed class VoidResultFormatter : IMessagePackFormatter<VoidResult>
{
    public static readonly VoidResultFormatter Instance = new();

    public void Serialize(ref MessagePackWriter writer, VoidResult value, MessagePackSerializerOptions options) => writer.WriteNil();

    public VoidResult Deserialize(ref MessagePackReader reader, MessagePackSerializerOptions options)
    {
        reader.Skip(); // Tolerate a value where nil was expected: the call succeeded either way.
        return default;
    }
}
