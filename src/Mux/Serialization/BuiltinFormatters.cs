using System.Globalization;

namespace Mux.Serialization;

/// <summary>Supplies the formatters Mux has for framework types without any registration.</summary>
internal static class BuiltinFormatters
{
    /// <summary>Gets the built-in formatter for <typeparamref name="T"/>, or <see langword="null"/> if there is none.</summary>
    public static IMuxFormatter<T>? Get<T>() => (IMuxFormatter<T>?)Create<T>();

    // Each typeof(T) == typeof(X) test is a constant for the JIT and the AOT compiler, so every
    // instantiation of this method shrinks to the single branch it needs; no reflection involved.
    private static object? Create<T>()
    {
        if (typeof(T) == typeof(bool)) return BooleanFormatter.Instance;
        if (typeof(T) == typeof(byte)) return ByteFormatter.Instance;
        if (typeof(T) == typeof(sbyte)) return SByteFormatter.Instance;
        if (typeof(T) == typeof(short)) return Int16Formatter.Instance;
        if (typeof(T) == typeof(ushort)) return UInt16Formatter.Instance;
        if (typeof(T) == typeof(int)) return Int32Formatter.Instance;
        if (typeof(T) == typeof(uint)) return UInt32Formatter.Instance;
        if (typeof(T) == typeof(long)) return Int64Formatter.Instance;
        if (typeof(T) == typeof(ulong)) return UInt64Formatter.Instance;
        if (typeof(T) == typeof(float)) return SingleFormatter.Instance;
        if (typeof(T) == typeof(double)) return DoubleFormatter.Instance;
        if (typeof(T) == typeof(char)) return CharFormatter.Instance;
        if (typeof(T) == typeof(string)) return StringFormatter.Instance;
        if (typeof(T) == typeof(byte[])) return ByteArrayFormatter.Instance;
        if (typeof(T) == typeof(DateTime)) return DateTimeFormatter.Instance;
        if (typeof(T) == typeof(DateTimeOffset)) return DateTimeOffsetFormatter.Instance;
        if (typeof(T) == typeof(TimeSpan)) return TimeSpanFormatter.Instance;
        if (typeof(T) == typeof(Guid)) return GuidFormatter.Instance;
        if (typeof(T) == typeof(decimal)) return DecimalFormatter.Instance;

        if (typeof(T) == typeof(bool?)) return new NullableFormatter<bool>();
        if (typeof(T) == typeof(byte?)) return new NullableFormatter<byte>();
        if (typeof(T) == typeof(sbyte?)) return new NullableFormatter<sbyte>();
        if (typeof(T) == typeof(short?)) return new NullableFormatter<short>();
        if (typeof(T) == typeof(ushort?)) return new NullableFormatter<ushort>();
        if (typeof(T) == typeof(int?)) return new NullableFormatter<int>();
        if (typeof(T) == typeof(uint?)) return new NullableFormatter<uint>();
        if (typeof(T) == typeof(long?)) return new NullableFormatter<long>();
        if (typeof(T) == typeof(ulong?)) return new NullableFormatter<ulong>();
        if (typeof(T) == typeof(float?)) return new NullableFormatter<float>();
        if (typeof(T) == typeof(double?)) return new NullableFormatter<double>();
        if (typeof(T) == typeof(char?)) return new NullableFormatter<char>();
        if (typeof(T) == typeof(DateTime?)) return new NullableFormatter<DateTime>();
        if (typeof(T) == typeof(DateTimeOffset?)) return new NullableFormatter<DateTimeOffset>();
        if (typeof(T) == typeof(TimeSpan?)) return new NullableFormatter<TimeSpan>();
        if (typeof(T) == typeof(Guid?)) return new NullableFormatter<Guid>();
        if (typeof(T) == typeof(decimal?)) return new NullableFormatter<decimal>();

        return null;
    }
}

internal sealed class BooleanFormatter : IMuxFormatter<bool>
{
    public static readonly BooleanFormatter Instance = new();

    public void Serialize(ref MessagePackWriter writer, bool value) => writer.Write(value);

    public bool Deserialize(ref MessagePackReader reader) => reader.ReadBoolean();
}

internal sealed class ByteFormatter : IMuxFormatter<byte>
{
    public static readonly ByteFormatter Instance = new();

    public void Serialize(ref MessagePackWriter writer, byte value) => writer.Write(value);

    public byte Deserialize(ref MessagePackReader reader) => reader.ReadByte();
}

internal sealed class SByteFormatter : IMuxFormatter<sbyte>
{
    public static readonly SByteFormatter Instance = new();

    public void Serialize(ref MessagePackWriter writer, sbyte value) => writer.Write(value);

    public sbyte Deserialize(ref MessagePackReader reader) => reader.ReadSByte();
}

internal sealed class Int16Formatter : IMuxFormatter<short>
{
    public static readonly Int16Formatter Instance = new();

    public void Serialize(ref MessagePackWriter writer, short value) => writer.Write(value);

    public short Deserialize(ref MessagePackReader reader) => reader.ReadInt16();
}

internal sealed class UInt16Formatter : IMuxFormatter<ushort>
{
    public static readonly UInt16Formatter Instance = new();

    public void Serialize(ref MessagePackWriter writer, ushort value) => writer.Write(value);

    public ushort Deserialize(ref MessagePackReader reader) => reader.ReadUInt16();
}

internal sealed class Int32Formatter : IMuxFormatter<int>
{
    public static readonly Int32Formatter Instance = new();

    public void Serialize(ref MessagePackWriter writer, int value) => writer.Write(value);

    public int Deserialize(ref MessagePackReader reader) => reader.ReadInt32();
}

internal sealed class UInt32Formatter : IMuxFormatter<uint>
{
    public static readonly UInt32Formatter Instance = new();

    public void Serialize(ref MessagePackWriter writer, uint value) => writer.Write(value);

    public uint Deserialize(ref MessagePackReader reader) => reader.ReadUInt32();
}

internal sealed class Int64Formatter : IMuxFormatter<long>
{
    public static readonly Int64Formatter Instance = new();

    public void Serialize(ref MessagePackWriter writer, long value) => writer.Write(value);

    public long Deserialize(ref MessagePackReader reader) => reader.ReadInt64();
}

internal sealed class UInt64Formatter : IMuxFormatter<ulong>
{
    public static readonly UInt64Formatter Instance = new();

    public void Serialize(ref MessagePackWriter writer, ulong value) => writer.Write(value);

    public ulong Deserialize(ref MessagePackReader reader) => reader.ReadUInt64();
}

internal sealed class SingleFormatter : IMuxFormatter<float>
{
    public static readonly SingleFormatter Instance = new();

    public void Serialize(ref MessagePackWriter writer, float value) => writer.Write(value);

    public float Deserialize(ref MessagePackReader reader) => reader.ReadSingle();
}

internal sealed class DoubleFormatter : IMuxFormatter<double>
{
    public static readonly DoubleFormatter Instance = new();

    public void Serialize(ref MessagePackWriter writer, double value) => writer.Write(value);

    public double Deserialize(ref MessagePackReader reader) => reader.ReadDouble();
}

internal sealed class CharFormatter : IMuxFormatter<char>
{
    public static readonly CharFormatter Instance = new();

    public void Serialize(ref MessagePackWriter writer, char value) => writer.Write(value);

    public char Deserialize(ref MessagePackReader reader) => reader.ReadChar();
}

internal sealed class StringFormatter : IMuxFormatter<string?>
{
    public static readonly StringFormatter Instance = new();

    public void Serialize(ref MessagePackWriter writer, string? value) => writer.Write(value);

    public string? Deserialize(ref MessagePackReader reader) => reader.ReadString();
}

internal sealed class ByteArrayFormatter : IMuxFormatter<byte[]?>
{
    public static readonly ByteArrayFormatter Instance = new();

    public void Serialize(ref MessagePackWriter writer, byte[]? value) => writer.WriteBinary(value);

    public byte[]? Deserialize(ref MessagePackReader reader) => reader.ReadBinary();
}

internal sealed class DateTimeFormatter : IMuxFormatter<DateTime>
{
    public static readonly DateTimeFormatter Instance = new();

    public void Serialize(ref MessagePackWriter writer, DateTime value) => writer.Write(value);

    public DateTime Deserialize(ref MessagePackReader reader) => reader.ReadDateTime();
}

/// <summary>Writes [UTC time as a timestamp, offset in minutes]; the offset keeps the local view.</summary>
internal sealed class DateTimeOffsetFormatter : IMuxFormatter<DateTimeOffset>
{
    public static readonly DateTimeOffsetFormatter Instance = new();

    private const int MaxOffsetMinutes = 14 * 60;

    public void Serialize(ref MessagePackWriter writer, DateTimeOffset value)
    {
        writer.WriteArrayHeader(2);
        writer.Write(value.UtcDateTime);
        writer.Write((short)(value.Offset.Ticks / TimeSpan.TicksPerMinute));
    }

    public DateTimeOffset Deserialize(ref MessagePackReader reader)
    {
        int start = reader.Consumed;
        int count = reader.ReadArrayHeader();
        if (count != 2)
        {
            MessagePackThrow.Invalid(FormattableString.Invariant(
                $"A DateTimeOffset at offset {start} has {count} elements; expected 2 (UTC time, offset minutes)."));
        }

        DateTime utc = reader.ReadDateTime();
        int minutes = reader.ReadInt16();
        long localTicks = utc.Ticks + (minutes * TimeSpan.TicksPerMinute);
        if (minutes is < -MaxOffsetMinutes or > MaxOffsetMinutes
            || localTicks < DateTime.MinValue.Ticks || localTicks > DateTime.MaxValue.Ticks)
        {
            MessagePackThrow.Invalid(FormattableString.Invariant(
                $"A DateTimeOffset at offset {start} has an offset of {minutes} minutes, which is out of range for {utc:O}."));
        }

        return new DateTimeOffset(localTicks, TimeSpan.FromMinutes(minutes));
    }
}

internal sealed class TimeSpanFormatter : IMuxFormatter<TimeSpan>
{
    public static readonly TimeSpanFormatter Instance = new();

    public void Serialize(ref MessagePackWriter writer, TimeSpan value) => writer.Write(value.Ticks);

    public TimeSpan Deserialize(ref MessagePackReader reader) => new(reader.ReadInt64());
}

/// <summary>Writes a 16-byte bin in RFC 4122 (big-endian) order, the order of the Guid's text form.</summary>
internal sealed class GuidFormatter : IMuxFormatter<Guid>
{
    public static readonly GuidFormatter Instance = new();

    public void Serialize(ref MessagePackWriter writer, Guid value)
    {
        Span<byte> bytes = stackalloc byte[16];
        value.TryWriteBytes(bytes, bigEndian: true, out _);
        writer.Write(bytes);
    }

    public Guid Deserialize(ref MessagePackReader reader)
    {
        int start = reader.Consumed;
        ReadOnlySpan<byte> bytes = reader.ReadBytes();
        if (bytes.Length != 16)
        {
            MessagePackThrow.Invalid(FormattableString.Invariant(
                $"A Guid at offset {start} has {bytes.Length} bytes; expected 16."));
        }

        return new Guid(bytes, bigEndian: true);
    }
}

/// <summary>Writes a decimal as its invariant-culture string, which keeps every digit and the scale.</summary>
internal sealed class DecimalFormatter : IMuxFormatter<decimal>
{
    public static readonly DecimalFormatter Instance = new();

    public void Serialize(ref MessagePackWriter writer, decimal value)
    {
        // The longest decimal text is 31 bytes ("-0.0000000000000000000000000001" style), so this never fails.
        Span<byte> utf8 = stackalloc byte[64];
        value.TryFormat(utf8, out int written, default, CultureInfo.InvariantCulture);
        writer.WriteString(utf8[..written]);
    }

    public decimal Deserialize(ref MessagePackReader reader)
    {
        int start = reader.Consumed;
        ReadOnlySpan<byte> utf8 = reader.ReadStringSpan();
        if (!decimal.TryParse(utf8, NumberStyles.Float, CultureInfo.InvariantCulture, out decimal value))
        {
            MessagePackThrow.Invalid(FormattableString.Invariant(
                $"The string at offset {start} is not a valid decimal."));
        }

        return value;
    }
}
