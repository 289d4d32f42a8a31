using Mux.Serialization;

namespace Mux.Serialization;

/// <summary>The "result" of a call that returns nothing: a Response whose body is nil.</summary>
internal readonly struct VoidResult
{
}

/// <summary>Reads and writes <see cref="VoidResult"/> as MessagePack nil.</summary>
internal sealed class VoidResultFormatter : IMuxFormatter<VoidResult>
{
    public static readonly VoidResultFormatter Instance = new();

    public void Serialize(ref MessagePackWriter writer, VoidResult value) => writer.WriteNil();

    public VoidResult Deserialize(ref MessagePackReader reader)
    {
        reader.Skip(); // Tolerate a value where nil was expected: the call succeeded either way.
        return default;
    }
}
