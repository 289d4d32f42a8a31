namespace Mux.Serialization;

/// <summary>Formats a nullable value type as nil or as the underlying value.</summary>
/// <typeparam name="T">The underlying value type.</typeparam>
public sealed class NullableFormatter<T> : IMuxFormatter<T?>
    where T : struct
{
    private IMuxFormatter<T>? _formatter;

    // Resolved on first use, not in the constructor: registrations may happen in any order.
    private IMuxFormatter<T> Formatter => _formatter ??= MuxFormatterResolver.GetFormatter<T>();

    /// <inheritdoc/>
    public void Serialize(ref MessagePackWriter writer, T? value)
    {
        if (value.HasValue)
        {
            Formatter.Serialize(ref writer, value.GetValueOrDefault());
        }
        else
        {
            writer.WriteNil();
        }
    }

    /// <inheritdoc/>
    public T? Deserialize(ref MessagePackReader reader)
    {
        if (reader.TryReadNil())
        {
            return null;
        }

        return Formatter.Deserialize(ref reader);
    }
}
