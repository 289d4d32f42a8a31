namespace Mux.Serialization;

/// <summary>Formats a <see cref="List{T}"/> as a MessagePack array, and <see langword="null"/> as nil.</summary>
/// <typeparam name="T">The element type.</typeparam>
public sealed class ListFormatter<T> : IMuxFormatter<List<T>?>
{
    private IMuxFormatter<T>? _elementFormatter;

    // Resolved on first use, not in the constructor: registrations may happen in any order.
    private IMuxFormatter<T> ElementFormatter => _elementFormatter ??= MuxFormatterResolver.GetFormatter<T>();

    /// <inheritdoc/>
    public void Serialize(ref MessagePackWriter writer, List<T>? value)
    {
        if (value is null)
        {
            writer.WriteNil();
            return;
        }

        IMuxFormatter<T> formatter = ElementFormatter;
        writer.WriteArrayHeader(value.Count);

        // Index rather than foreach: no enumerator, and a concurrent change cannot push more
        // elements than the header announced.
        int count = value.Count;
        for (int i = 0; i < count; i++)
        {
            formatter.Serialize(ref writer, value[i]);
        }
    }

    /// <inheritdoc/>
    public List<T>? Deserialize(ref MessagePackReader reader)
    {
        if (reader.TryReadNil())
        {
            return null;
        }

        // Pre-sizing is safe: the reader rejects counts larger than the bytes left.
        int count = reader.ReadArrayHeader();
        var result = new List<T>(count);
        if (count == 0)
        {
            return result;
        }

        IMuxFormatter<T> formatter = ElementFormatter;
        for (int i = 0; i < count; i++)
        {
            result.Add(formatter.Deserialize(ref reader));
        }

        return result;
    }
}
