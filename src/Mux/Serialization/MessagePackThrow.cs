using System.Diagnostics.CodeAnalysis;
using System.Globalization;

namespace Mux.Serialization;

/// <summary>
/// Builds and throws the serialization exceptions. Kept out of line so the hot read and write
/// methods stay small enough to inline.
/// </summary>
internal static class MessagePackThrow
{
    [DoesNotReturn]
    public static void EndOfData(int offset, long needed) =>
        throw new MuxSerializationException(string.Create(
            CultureInfo.InvariantCulture,
            $"Unexpected end of MessagePack data at offset {offset}; needed {needed} more bytes."));

    [DoesNotReturn]
    public static void TypeMismatch(string expected, byte code, int offset) =>
        throw new MuxSerializationException(string.Create(
            CultureInfo.InvariantCulture,
            $"Expected {expected} but found {MessagePackCode.GetType(code)} (0x{code:x2}) at offset {offset}."));

    [DoesNotReturn]
    public static void DoesNotFit(bool negative, ulong raw, string targetType, int offset)
    {
        string value = negative
            ? ((long)raw).ToString(CultureInfo.InvariantCulture)
            : raw.ToString(CultureInfo.InvariantCulture);
        throw new MuxSerializationException(string.Create(
            CultureInfo.InvariantCulture,
            $"MessagePack integer at offset {offset}: value {value} does not fit in {targetType}."));
    }

    [DoesNotReturn]
    public static void CountExceedsData(string kind, long count, string unit, int offset, int remaining) =>
        throw new MuxSerializationException(string.Create(
            CultureInfo.InvariantCulture,
            $"MessagePack {kind} at offset {offset} claims {count} {unit} but only {remaining} bytes remain."));

    [DoesNotReturn]
    public static void Invalid(string message) => throw new MuxSerializationException(message);

    [DoesNotReturn]
    public static T Invalid<T>(string message) => throw new MuxSerializationException(message);

    [DoesNotReturn]
    public static void NegativeLength(string paramName) =>
        throw new ArgumentOutOfRangeException(paramName, "The length must not be negative.");
}
