namespace Mux.Serialization;

/// <summary>Converts values of one type to and from MessagePack.</summary>
/// <typeparam name="T">The type this formatter handles.</typeparam>
public interface IMuxFormatter<T>
{
    /// <summary>Writes <paramref name="value"/> as exactly one MessagePack value.</summary>
    /// <param name="writer">The writer to write to.</param>
    /// <param name="value">The value to write.</param>
    void Serialize(ref MessagePackWriter writer, T value);

    /// <summary>Reads exactly one MessagePack value and converts it to <typeparamref name="T"/>.</summary>
    /// <param name="reader">The reader to read from.</param>
    /// <returns>The value read.</returns>
    /// <exception cref="MuxSerializationException">The data is not valid for <typeparamref name="T"/>.</exception>
    T Deserialize(ref MessagePackReader reader);
}
