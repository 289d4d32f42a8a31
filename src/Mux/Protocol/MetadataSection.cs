using System.Buffers;
using System.Buffers.Binary;
using MessagePack;

namespace Mux.Protocol;

/// <summary>
/// A Request's u32 size and MessagePack map of string keys to string values, before the arguments (docs/protocol.md,
/// "Metadata"). It travels in the body rather than the frame's header, so it is bounded only by the receiver's limit
/// and is read by the call's worker thread rather than the reader loop.
/// </summary>
internal static class MetadataSection
{
    /// <summary>Keys starting with this (in any case) are Mux's own; a receiver skips those it does not know.</summary>
    public const string ReservedPrefix = "mux-";

    public const int LengthSize = 4;

    /// <summary>The options' default: 8 KiB, as common HTTP servers bound a request's headers.</summary>

    public const int DefaultMaxSize = 8 * 1024;

    /// <summary>Why a key cannot be metadata, or null when it can.</summary>
    public static string? DescribeInvalidKey(string key) =>
        DescribeInvalidCharacters(key)
        ?? (IsReserved(key)
            ? $"The Mux metadata key '{key}' starts with '{ReservedPrefix}', which is reserved for Mux's own keys; choose another name."
            : null);

    private static bool IsReserved(string key) => key.StartsWith(ReservedPrefix, StringComparison.OrdinalIgnoreCase);

    private static string? DescribeInvalidCharacters(string key)
    {
        if (key.Length == 0)
        {
            return "A Mux metadata key cannot be empty.";
        }

        foreach (char c in key)
        {
            if (c is < '!' or > '~')
            {
                return $"The Mux metadata key '{key}' has the character U+{(int)c:X4}; " +
                    "keys are printable ASCII without spaces (0x21-0x7E), compared case-insensitively.";
            }
        }

        return null;
    }

    /// <summary>Keys must be valid (<see cref="DescribeInvalidKey"/>) and distinct in any case; they are sent lower-case.</summary>
    public static byte[] Encode(IReadOnlyCollection<KeyValuePair<string, string>> entries)
    {
        var buffer = new ArrayBufferWriter<byte>(64);
        var writer = new MessagePackWriter(buffer);
        writer.WriteMapHeader(entries.Count);
        foreach (KeyValuePair<string, string> entry in entries)
        {
            writer.Write(entry.Key.ToLowerInvariant()); // ASCII keys: the invariant lower case is the ASCII one.
            writer.Write(entry.Value);
        }

        writer.Flush();
        byte[] section = new byte[LengthSize + buffer.WrittenCount];
        BinaryPrimitives.WriteUInt32LittleEndian(section, (uint)buffer.WrittenCount);
        buffer.WrittenSpan.CopyTo(section.AsSpan(LengthSize));
        return section;
    }

    /// <summary>What a receiver's limit counts.</summary>
    public static int MapSize(byte[] section) => section.Length - LengthSize;

    /// <summary>
    /// The size is checked against <paramref name="maxSize"/> before anything else is read. <paramref name="entries"/>
    /// holds the keys not reserved for Mux; <paramref name="consumed"/> is where the arguments start.
    /// </summary>
    public static ReadStatus Read(
        in ReadOnlySequence<byte> payload, int maxSize, out Dictionary<string, string>? entries, out long consumed, out long size,
        out string? problem)

    {
        entries = null;
        consumed = 0;
        size = 0;
        problem = null;
        if (payload.Length < LengthSize)
        {
            problem = $"the Metadata flag is set but only {payload.Length} bytes follow the headers, fewer than the section's {LengthSize}-byte size";
            return ReadStatus.Malformed;
        }

        size = FrameReader.ReadUInt32(payload);
        if (size > maxSize)
        {
            return ReadStatus.TooLarge;
        }

        if (size > payload.Length - LengthSize)
        {
            problem = $"the section announces {size} bytes but only {payload.Length - LengthSize} follow";
            return ReadStatus.Malformed;
        }

        consumed = LengthSize + size;
        var reader = new MessagePackReader(payload.Slice(LengthSize, size));
        try
        {
            int count = reader.ReadMapHeader();
            entries = new Dictionary<string, string>(Math.Min(count, 16), StringComparer.OrdinalIgnoreCase);

            // Mux's own keys are dropped, but only once they pass the same checks as the others (a later version's key
            // is still a valid, single key).
            HashSet<string>? reserved = null;
            for (int i = 0; i < count; i++)
            {
                string? key = reader.ReadString();
                string? value = reader.ReadString();
                if (key is null || value is null)
                {
                    problem = "a key or value is nil; both must be strings";
                    return ReadStatus.Malformed;
                }

                if (DescribeInvalidCharacters(key) is { } invalid)
                {
                    problem = invalid;
                    return ReadStatus.Malformed;
                }

                bool added = IsReserved(key)
                    ? (reserved ??= new HashSet<string>(StringComparer.OrdinalIgnoreCase)).Add(key)
                    : entries.TryAdd(key, value);
                if (!added)
                {
                    problem = $"the key '{key}' appears twice (keys are compared case-insensitively)";
                    return ReadStatus.Malformed;
                }
            }

            if (!reader.End)
            {
                problem = $"{reader.Sequence.Length - reader.Consumed} bytes follow the map inside the section";
                return ReadStatus.Malformed;
            }
        }
        catch (Exception ex) when (MalformedMessagePack.IsReadFailure(ex))
        {
            problem = "it is not a MessagePack map of strings: " + ex.Message;
            return ReadStatus.Malformed;
        }

        return ReadStatus.Ok;
    }

    public enum
 ReadStatus
    {
        Ok,

        /// <summary>The section is larger than the receiver's limit; nothing of it was read.</summary>
        TooLarge,

        /// <summary>The section cannot be read (its sizes, its MessagePack, a key).</summary>
        Malformed,
    }
}
