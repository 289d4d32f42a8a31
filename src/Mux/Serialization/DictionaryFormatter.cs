using System.Diagnostics.CodeAnalysis;

namespace Mux.Serialization;

/// <summary>Formats a <see cref="Dictionary{TKey, TValue}"/> as a MessagePack map, and <see langword="null"/> as nil.</summary>
/// <typeparam name="TKey">The key type.</typeparam>
/// <typeparam name="TValue">The value type.</typeparam>
/// <remarks>When a map repeats a key, the last value wins.</remarks>
public sealed class DictionaryFormatter<TKey, TValue> : IMuxFormatter<Dictionary<TKey, TValue>?>
    where TKey : notnull
{
    private IMuxFormatter<TKey>? _keyFormatter;
    private IMuxFormatter<TValue>? _valueFormatter;

    // Resolved on first use, not in the constructor: registrations may happen in any order.
    private IMuxFormatter<TKey> KeyFormatter => _keyFormatter ??= MuxFormatterResolver.GetFormatter<TKey>();

    private IMuxFormatter<TValue> ValueFormatter => _valueFormatter ??= MuxFormatterResolver.GetFormatter<TValue>();

    /// <inheritdoc/>
    public void Serialize(ref MessagePackWriter writer, Dictionary<TKey, TValue>? value)
    {
        if (value is null)
        {
            writer.WriteNil();
            return;
        }

        IMuxFormatter<TKey> keyFormatter = KeyFormatter;
        IMuxFormatter<TValue> valueFormatter = ValueFormatter;
        writer.WriteMapHeader(value.Count);

        // Dictionary's struct enumerator: no allocation, no boxing.
        foreach (KeyValuePair<TKey, TValue> pair in value)
        {
            keyFormatter.Serialize(ref writer, pair.Key);
            valueFormatter.Serialize(ref writer, pair.Value);
        }
    }

    /// <inheritdoc/>
    public Dictionary<TKey, TValue>? Deserialize(ref MessagePackReader reader)
    {
        if (reader.TryReadNil())
        {
            return null;
        }

        // Pre-sizing is safe: the reader rejects counts larger than the bytes left can hold.
        int count = reader.ReadMapHeader();
        var result = new Dictionary<TKey, TValue>(count);
        if (count == 0)
        {
            return result;
        }

        IMuxFormatter<TKey> keyFormatter = KeyFormatter;
        IMuxFormatter<TValue> valueFormatter = ValueFormatter;
        for (int i = 0; i < count; i++)
        {
            int keyOffset = reader.Consumed;
            TKey key = keyFormatter.Deserialize(ref reader);
            if (key is null)
            {
                ThrowNullKey(keyOffset);
            }

            result[key] = valueFormatter.Deserialize(ref reader);
        }

        return result;
    }

    [DoesNotReturn]
    private static void ThrowNullKey(int offset) =>
        MessagePackThrow.Invalid(FormattableString.Invariant($"A MessagePack map key at offset {offset} is nil; dictionary keys cannot be null."));
}
