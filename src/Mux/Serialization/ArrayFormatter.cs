namespace Mux.Serialization;

/// <summary>Formats a one-dimensional array as a MessagePack array, and <see langword="null"/> as nil.</summary>
/// <typeparam name="T">The element type.</typeparam>
public sealed class ArrayFormatter<T> : IMuxFormatter<T[]?>
{
    private IMuxFormatter<T>? _elementFormatter;

    // Resolved on first use, not in the constructor: registrations may happen in any order.
    private IMuxFormatter<T> ElementFormatter => _elementFormatter ??= MuxFormatterResolver.GetFormatter<T>();

    /// <inheritdoc/>
    public void Serialize(ref MessagePackWriter writer, T[]? value)
    {
        if (value is null)
        {
            writer.WriteNil();
            return;
        }

        IMuxFormatter<T> formatter = ElementFormatter;
        writer.WriteArrayHeader(value.Length);
        for (int i = 0; i < value.Length; i++)
        {
            formatter.Serialize(ref writer, value[i]);
        }
    }

    /// <inheritdoc/>
    public T[]? Deserialize(ref MessagePackReader reader)
    {
        if (reader.TryReadNil())
        {
            return null;
        }

        // The reader has already checked the count against the bytes left.
        int count = reader.ReadArrayHeader();
        if (count == 0)
        {
            return [];
        }

        IMuxFormatter<T> formatter = ElementFormatter;
        var result = new T[count];
        for (int i = 0; i < result.Length; i++)
        {
            result[i] = formatter.Deserialize(ref reader);
        }

        return result;
    }
}
