using System.Buffers.Binary;
using System.Runtime.CompilerServices;
using System.Text;

namespace Mux.Serialization;

/// <summary>
/// Reads MessagePack from one contiguous span. Every read checks bounds and types and reports
/// problems as <see cref="MuxSerializationException"/>, so hostile input cannot cause other
/// exceptions or oversized allocations.
/// </summary>
/// <remarks>
/// Integer reads accept any integer encoding whose value fits the target type, not only the
/// smallest one, because other MessagePack implementations are free to choose wider encodings.
/// </remarks>
public ref struct MessagePackReader
{
    private const long UnixEpochTicks = 621_355_968_000_000_000;
    private const long MinTimestampSeconds = -UnixEpochTicks / TimeSpan.TicksPerSecond;
    private const long MaxTimestampSeconds = (3_155_378_975_999_999_999 - UnixEpochTicks) / TimeSpan.TicksPerSecond;

    private readonly ReadOnlySpan<byte> _data;
    private int _position;

    /// <summary>Creates a reader over <paramref name="data"/>.</summary>
    /// <param name="data">The MessagePack bytes to read.</param>
    public MessagePackReader(ReadOnlySpan<byte> data)
    {
        _data = data;
        _position = 0;
    }

    /// <summary>Gets the number of bytes consumed so far.</summary>
    public readonly int Consumed => _position;

    /// <summary>Gets whether all data has been consumed.</summary>
    public readonly bool End => _position >= _data.Length;

    /// <summary>Gets the type of the next value without consuming it.</summary>
    /// <exception cref="MuxSerializationException">There is no more data.</exception>
    public readonly MessagePackType NextType => MessagePackCode.GetType(PeekCode());

    /// <summary>Consumes the next value if it is nil.</summary>
    /// <returns><see langword="true"/> if the next value was nil and has been consumed; otherwise <see langword="false"/>.</returns>
    /// <exception cref="MuxSerializationException">There is no more data.</exception>
    public bool TryReadNil()
    {
        if (PeekCode() == MessagePackCode.Nil)
        {
            _position++;
            return true;
        }

        return false;
    }

    /// <summary>Reads a nil value.</summary>
    /// <exception cref="MuxSerializationException">The next value is not nil, or there is no more data.</exception>
    public void ReadNil()
    {
        byte code = PeekCode();
        if (code != MessagePackCode.Nil)
        {
            MessagePackThrow.TypeMismatch("Nil", code, _position);
        }

        _position++;
    }

    /// <summary>Reads a boolean.</summary>
    /// <returns>The value read.</returns>
    /// <exception cref="MuxSerializationException">The next value is not a boolean, or there is no more data.</exception>
    public bool ReadBoolean()
    {
        byte code = PeekCode();
        if (code == MessagePackCode.True)
        {
            _position++;
            return true;
        }

        if (code != MessagePackCode.False)
        {
            MessagePackThrow.TypeMismatch("Boolean", code, _position);
        }

        _position++;
        return false;
    }

    /// <summary>Reads an integer that must fit in <see cref="byte"/>.</summary>
    /// <returns>The value read.</returns>
    /// <exception cref="MuxSerializationException">The next value is not an integer, does not fit, or is truncated.</exception>
    public byte ReadByte()
    {
        int start = _position;
        ulong raw = ReadIntegerCore(out bool negative);
        if (negative || raw > byte.MaxValue)
        {
            MessagePackThrow.DoesNotFit(negative, raw, nameof(Byte), start);
        }

        return (byte)raw;
    }

    /// <summary>Reads an integer that must fit in <see cref="sbyte"/>.</summary>
    /// <returns>The value read.</returns>
    /// <exception cref="MuxSerializationException">The next value is not an integer, does not fit, or is truncated.</exception>
    public sbyte ReadSByte()
    {
        int start = _position;
        ulong raw = ReadIntegerCore(out bool negative);
        if (negative ? (long)raw < sbyte.MinValue : raw > (ulong)sbyte.MaxValue)
        {
            MessagePackThrow.DoesNotFit(negative, raw, nameof(SByte), start);
        }

        return (sbyte)raw;
    }

    /// <summary>Reads an integer that must fit in <see cref="short"/>.</summary>
    /// <returns>The value read.</returns>
    /// <exception cref="MuxSerializationException">The next value is not an integer, does not fit, or is truncated.</exception>
    public short ReadInt16()
    {
        int start = _position;
        ulong raw = ReadIntegerCore(out bool negative);
        if (negative ? (long)raw < short.MinValue : raw > (ulong)short.MaxValue)
        {
            MessagePackThrow.DoesNotFit(negative, raw, nameof(Int16), start);
        }

        return (short)raw;
    }

    /// <summary>Reads an integer that must fit in <see cref="ushort"/>.</summary>
    /// <returns>The value read.</returns>
    /// <exception cref="MuxSerializationException">The next value is not an integer, does not fit, or is truncated.</exception>
    public ushort ReadUInt16()
    {
        int start = _position;
        ulong raw = ReadIntegerCore(out bool negative);
        if (negative || raw > ushort.MaxValue)
        {
            MessagePackThrow.DoesNotFit(negative, raw, nameof(UInt16), start);
        }

        return (ushort)raw;
    }

    /// <summary>Reads an integer that must fit in <see cref="int"/>.</summary>
    /// <returns>The value read.</returns>
    /// <exception cref="MuxSerializationException">The next value is not an integer, does not fit, or is truncated.</exception>
    public int ReadInt32()
    {
        int start = _position;
        ulong raw = ReadIntegerCore(out bool negative);
        if (negative ? (long)raw < int.MinValue : raw > int.MaxValue)
        {
            MessagePackThrow.DoesNotFit(negative, raw, nameof(Int32), start);
        }

        return (int)raw;
    }

    /// <summary>Reads an integer that must fit in <see cref="uint"/>.</summary>
    /// <returns>The value read.</returns>
    /// <exception cref="MuxSerializationException">The next value is not an integer, does not fit, or is truncated.</exception>
    public uint ReadUInt32()
    {
        int start = _position;
        ulong raw = ReadIntegerCore(out bool negative);
        if (negative || raw > uint.MaxValue)
        {
            MessagePackThrow.DoesNotFit(negative, raw, nameof(UInt32), start);
        }

        return (uint)raw;
    }

    /// <summary>Reads an integer that must fit in <see cref="long"/>.</summary>
    /// <returns>The value read.</returns>
    /// <exception cref="MuxSerializationException">The next value is not an integer, does not fit, or is truncated.</exception>
    public long ReadInt64()
    {
        int start = _position;
        ulong raw = ReadIntegerCore(out bool negative);
        if (!negative && raw > long.MaxValue)
        {
            MessagePackThrow.DoesNotFit(negative, raw, nameof(Int64), start);
        }

        return (long)raw;
    }

    /// <summary>Reads an integer that must fit in <see cref="ulong"/>.</summary>
    /// <returns>The value read.</returns>
    /// <exception cref="MuxSerializationException">The next value is not an integer, is negative, or is truncated.</exception>
    public ulong ReadUInt64()
    {
        int start = _position;
        ulong raw = ReadIntegerCore(out bool negative);
        if (negative)
        {
            MessagePackThrow.DoesNotFit(negative, raw, nameof(UInt64), start);
        }

        return raw;
    }

    /// <summary>Reads a char, written as an unsigned 16-bit integer.</summary>
    /// <returns>The value read.</returns>
    /// <exception cref="MuxSerializationException">The next value is not an integer, does not fit, or is truncated.</exception>
    public char ReadChar()
    {
        int start = _position;
        ulong raw = ReadIntegerCore(out bool negative);
        if (negative || raw > char.MaxValue)
        {
            MessagePackThrow.DoesNotFit(negative, raw, nameof(Char), start);
        }

        return (char)raw;
    }

    /// <summary>Reads a float32, or an integer converted to <see cref="float"/>.</summary>
    /// <returns>The value read.</returns>
    /// <exception cref="MuxSerializationException">The next value is not a float32 or integer, or is truncated.</exception>
    public float ReadSingle()
    {
        byte code = PeekCode();
        if (code == MessagePackCode.Float32)
        {
            EnsureAvailable(5);
            float value = BinaryPrimitives.ReadSingleBigEndian(_data.Slice(_position + 1, 4));
            _position += 5;
            return value;
        }

        if (MessagePackCode.GetType(code) != MessagePackType.Integer)
        {
            MessagePackThrow.TypeMismatch("Float32", code, _position);
        }

        ulong raw = ReadIntegerCore(out bool negative);
        return negative ? (float)(long)raw : (float)raw;
    }

    /// <summary>Reads a float32 or float64, or an integer converted to <see cref="double"/>.</summary>
    /// <returns>The value read.</returns>
    /// <exception cref="MuxSerializationException">The next value is not a float or integer, or is truncated.</exception>
    public double ReadDouble()
    {
        byte code = PeekCode();
        if (code == MessagePackCode.Float64)
        {
            EnsureAvailable(9);
            double value = BinaryPrimitives.ReadDoubleBigEndian(_data.Slice(_position + 1, 8));
            _position += 9;
            return value;
        }

        if (code == MessagePackCode.Float32)
        {
            EnsureAvailable(5);
            float value = BinaryPrimitives.ReadSingleBigEndian(_data.Slice(_position + 1, 4));
            _position += 5;
            return value;
        }

        if (MessagePackCode.GetType(code) != MessagePackType.Integer)
        {
            MessagePackThrow.TypeMismatch("Float", code, _position);
        }

        ulong raw = ReadIntegerCore(out bool negative);
        return negative ? (double)(long)raw : (double)raw;
    }

    /// <summary>Reads a UTF-8 string, or <see langword="null"/> for nil.</summary>
    /// <returns>The value read.</returns>
    /// <exception cref="MuxSerializationException">The next value is not a string or nil, or is truncated.</exception>
    public string? ReadString()
    {
        if (TryReadNil())
        {
            return null;
        }

        ReadOnlySpan<byte> utf8 = ReadStringSpan();
        return utf8.IsEmpty ? string.Empty : Encoding.UTF8.GetString(utf8);
    }

    /// <summary>
    /// Reads binary (or a string's UTF-8 bytes) as a slice of the input, without copying.
    /// </summary>
    /// <returns>The bytes, valid as long as the input is.</returns>
    /// <exception cref="MuxSerializationException">The next value is not binary or a string, or is truncated.</exception>
    public ReadOnlySpan<byte> ReadBytes()
    {
        int start = _position;
        byte code = PeekCode();
        int headerSize;
        long length;
        switch (code)
        {
            case MessagePackCode.Bin8:
            case MessagePackCode.Str8:
                EnsureAvailable(2);
                headerSize = 2;
                length = _data[start + 1];
                break;
            case MessagePackCode.Bin16:
            case MessagePackCode.Str16:
                EnsureAvailable(3);
                headerSize = 3;
                length = BinaryPrimitives.ReadUInt16BigEndian(_data.Slice(start + 1, 2));
                break;
            case MessagePackCode.Bin32:
            case MessagePackCode.Str32:
                EnsureAvailable(5);
                headerSize = 5;
                length = BinaryPrimitives.ReadUInt32BigEndian(_data.Slice(start + 1, 4));
                break;
            default:
                if (code is < MessagePackCode.MinFixStr or > MessagePackCode.MaxFixStr)
                {
                    MessagePackThrow.TypeMismatch("Binary", code, start);
                }

                headerSize = 1;
                length = code & 0x1f;
                break;
        }

        return ReadPayload(headerSize, length);
    }

    /// <summary>Reads binary (or a string's UTF-8 bytes) into a new array, or <see langword="null"/> for nil.</summary>
    /// <returns>The bytes read.</returns>
    /// <exception cref="MuxSerializationException">The next value is not binary, a string or nil, or is truncated.</exception>
    public byte[]? ReadBinary()
    {
        if (TryReadNil())
        {
            return null;
        }

        return ReadBytes().ToArray();
    }

    /// <summary>Reads a timestamp extension (type -1) in any of its three forms.</summary>
    /// <returns>The value read, with <see cref="DateTimeKind.Utc"/>.</returns>
    /// <exception cref="MuxSerializationException">The next value is not a timestamp, is out of range for <see cref="DateTime"/>, or is truncated.</exception>
    public DateTime ReadDateTime()
    {
        int start = _position;
        (sbyte typeCode, int length) = ReadExtensionHeader();
        if (typeCode != MessagePackCode.TimestampTypeCode)
        {
            MessagePackThrow.Invalid(FormattableString.Invariant(
                $"Expected a timestamp extension (type -1) but found extension type {typeCode} at offset {start}."));
        }

        ReadOnlySpan<byte> payload = _data.Slice(_position, length);
        long seconds;
        uint nanoseconds;
        switch (length)
        {
            case 4:
                seconds = BinaryPrimitives.ReadUInt32BigEndian(payload);
                nanoseconds = 0;
                break;
            case 8:
                ulong packed = BinaryPrimitives.ReadUInt64BigEndian(payload);
                nanoseconds = (uint)(packed >> 34);
                seconds = (long)(packed & 0x3_ffff_ffffUL);
                break;
            case 12:
                nanoseconds = BinaryPrimitives.ReadUInt32BigEndian(payload);
                seconds = BinaryPrimitives.ReadInt64BigEndian(payload[4..]);
                break;
            default:
                MessagePackThrow.Invalid(FormattableString.Invariant(
                    $"A timestamp extension at offset {start} has length {length}; expected 4, 8 or 12."));
                return default;
        }

        if (nanoseconds >= 1_000_000_000 || seconds < MinTimestampSeconds || seconds > MaxTimestampSeconds)
        {
            MessagePackThrow.Invalid(FormattableString.Invariant(
                $"The timestamp at offset {start} ({seconds} s, {nanoseconds} ns) is out of range for DateTime."));
        }

        _position += length;
        long ticks = UnixEpochTicks + (seconds * TimeSpan.TicksPerSecond) + (nanoseconds / 100);
        return new DateTime(ticks, DateTimeKind.Utc);
    }

    /// <summary>Reads an array header.</summary>
    /// <returns>The number of elements that follow.</returns>
    /// <exception cref="MuxSerializationException">
    /// The next value is not an array, is truncated, or claims more elements than there are bytes left.
    /// </exception>
    public int ReadArrayHeader()
    {
        int start = _position;
        byte code = PeekCode();
        long count;
        if (code is >= MessagePackCode.MinFixArray and <= MessagePackCode.MaxFixArray)
        {
            count = code & 0x0f;
            _position++;
        }
        else if (code == MessagePackCode.Array16)
        {
            count = ReadUInt16At(start);
            _position += 3;
        }
        else if (code == MessagePackCode.Array32)
        {
            count = ReadUInt32At(start);
            _position += 5;
        }
        else
        {
            MessagePackThrow.TypeMismatch("Array", code, start);
            return 0;
        }

        // Every element takes at least one byte, so a larger count cannot be honest; rejecting it
        // here keeps callers from pre-sizing a collection for it.
        int remaining = _data.Length - _position;
        if (count > remaining)
        {
            _position = start;
            MessagePackThrow.CountExceedsData("array", count, "elements", start, remaining);
        }

        return (int)count;
    }

    /// <summary>Reads a map header.</summary>
    /// <returns>The number of key/value pairs that follow.</returns>
    /// <exception cref="MuxSerializationException">
    /// The next value is not a map, is truncated, or claims more pairs than the bytes left can hold.
    /// </exception>
    public int ReadMapHeader()
    {
        int start = _position;
        byte code = PeekCode();
        long count;
        if (code is >= MessagePackCode.MinFixMap and <= MessagePackCode.MaxFixMap)
        {
            count = code & 0x0f;
            _position++;
        }
        else if (code == MessagePackCode.Map16)
        {
            count = ReadUInt16At(start);
            _position += 3;
        }
        else if (code == MessagePackCode.Map32)
        {
            count = ReadUInt32At(start);
            _position += 5;
        }
        else
        {
            MessagePackThrow.TypeMismatch("Map", code, start);
            return 0;
        }

        // Every pair takes at least two bytes (a key and a value).
        int remaining = _data.Length - _position;
        if (count * 2 > remaining)
        {
            _position = start;
            MessagePackThrow.CountExceedsData("map", count, "entries", start, remaining);
        }

        return (int)count;
    }

    /// <summary>Reads an extension header; the payload follows and can be read with <see cref="ReadRaw"/>.</summary>
    /// <returns>The extension type code and the payload length in bytes.</returns>
    /// <exception cref="MuxSerializationException">
    /// The next value is not an extension, is truncated, or claims a payload longer than the bytes left.
    /// </exception>
    public (sbyte TypeCode, int Length) ReadExtensionHeader()
    {
        int start = _position;
        byte code = PeekCode();
        int headerSize;
        long length;
        switch (code)
        {
            case MessagePackCode.FixExt1:
                headerSize = 2;
                length = 1;
                break;
            case MessagePackCode.FixExt2:
                headerSize = 2;
                length = 2;
                break;
            case MessagePackCode.FixExt4:
                headerSize = 2;
                length = 4;
                break;
            case MessagePackCode.FixExt8:
                headerSize = 2;
                length = 8;
                break;
            case MessagePackCode.FixExt16:
                headerSize = 2;
                length = 16;
                break;
            case MessagePackCode.Ext8:
                EnsureAvailable(3);
                headerSize = 3;
                length = _data[start + 1];
                break;
            case MessagePackCode.Ext16:
                EnsureAvailable(4);
                headerSize = 4;
                length = BinaryPrimitives.ReadUInt16BigEndian(_data.Slice(start + 1, 2));
                break;
            case MessagePackCode.Ext32:
                EnsureAvailable(6);
                headerSize = 6;
                length = BinaryPrimitives.ReadUInt32BigEndian(_data.Slice(start + 1, 4));
                break;
            default:
                MessagePackThrow.TypeMismatch("Extension", code, start);
                return default;
        }

        EnsureAvailable(headerSize);
        EnsureAvailable(headerSize + length);
        sbyte typeCode = unchecked((sbyte)_data[start + headerSize - 1]);
        _position += headerSize;
        return (typeCode, (int)length);
    }

    /// <summary>Skips one complete value of any type, including everything nested inside it.</summary>
    /// <exception cref="MuxSerializationException">The data is truncated or not valid MessagePack.</exception>
    public void Skip()
    {
        // Iterative rather than recursive: a count of values still to skip replaces the call
        // stack, so hostile nesting depth cannot overflow the stack. The count stays bounded
        // because every header is checked against the bytes that remain.
        long pending = 1;
        while (pending > 0)
        {
            pending--;
            int start = _position;
            byte code = PeekCode();
            switch (MessagePackCode.GetType(code))
            {
                case MessagePackType.Integer:
                    SkipBytes(code switch
                    {
                        MessagePackCode.UInt8 or MessagePackCode.Int8 => 2,
                        MessagePackCode.UInt16 or MessagePackCode.Int16 => 3,
                        MessagePackCode.UInt32 or MessagePackCode.Int32 => 5,
                        MessagePackCode.UInt64 or MessagePackCode.Int64 => 9,
                        _ => 1,
                    });
                    break;
                case MessagePackType.Nil:
                case MessagePackType.Boolean:
                    _position++;
                    break;
                case MessagePackType.Float:
                    SkipBytes(code == MessagePackCode.Float32 ? 5 : 9);
                    break;
                case MessagePackType.String:
                case MessagePackType.Binary:
                    ReadBytes();
                    break;
                case MessagePackType.Extension:
                    (_, int length) = ReadExtensionHeader();
                    _position += length;
                    break;
                case MessagePackType.Array:
                    pending += ReadArrayHeader();
                    break;
                case MessagePackType.Map:
                    pending += 2L * ReadMapHeader();
                    break;
                default:
                    MessagePackThrow.TypeMismatch("a MessagePack value", code, start);
                    break;
            }
        }
    }

    /// <summary>
    /// Reads one complete value of any type as its encoded bytes, without decoding it; useful to
    /// pass a value on unchanged with <see cref="MessagePackWriter.WriteRaw"/>.
    /// </summary>
    /// <returns>A slice of the input, valid as long as the input is.</returns>
    /// <exception cref="MuxSerializationException">The data is truncated or not valid MessagePack.</exception>
    public ReadOnlySpan<byte> ReadRawValue()
    {
        int start = _position;
        Skip();
        return _data[start.._position];
    }

    /// <summary>Reads a string's UTF-8 bytes as a slice of the input (no nil).</summary>
    internal ReadOnlySpan<byte> ReadStringSpan()
    {
        byte code = PeekCode();
        if (code is not ((>= MessagePackCode.MinFixStr and <= MessagePackCode.MaxFixStr)
            or MessagePackCode.Str8 or MessagePackCode.Str16 or MessagePackCode.Str32))
        {
            MessagePackThrow.TypeMismatch("String", code, _position);
        }

        return ReadBytes();
    }

    /// <summary>Reads the next <paramref name="length"/> bytes as they are, such as an extension payload.</summary>
    /// <param name="length">The number of bytes to read.</param>
    /// <returns>A slice of the input, valid as long as the input is.</returns>
    /// <exception cref="MuxSerializationException">Fewer than <paramref name="length"/> bytes remain.</exception>
    public ReadOnlySpan<byte> ReadRaw(int length)
    {
        if (length < 0)
        {
            MessagePackThrow.NegativeLength(nameof(length));
        }

        EnsureAvailable(length);
        ReadOnlySpan<byte> slice = _data.Slice(_position, length);
        _position += length;
        return slice;
    }

    /// <summary>
    /// Reads any integer encoding. Returns the value's 64 bits: as an unsigned number when
    /// <paramref name="negative"/> is false, else as a two's complement <see cref="long"/>.
    /// </summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private ulong ReadIntegerCore(out bool negative)
    {
        byte code = PeekCode();
        if (code <= MessagePackCode.MaxFixInt)
        {
            _position++;
            negative = false;
            return code;
        }

        if (code >= MessagePackCode.MinNegativeFixInt)
        {
            _position++;
            negative = true;
            return (ulong)(long)(sbyte)code;
        }

        return ReadIntegerSlow(code, out negative);
    }

    private ulong ReadIntegerSlow(byte code, out bool negative)
    {
        int start = _position;
        ulong result;
        switch (code)
        {
            case MessagePackCode.UInt8:
                EnsureAvailable(2);
                result = _data[start + 1];
                _position += 2;
                negative = false;
                return result;
            case MessagePackCode.UInt16:
                result = ReadUInt16At(start);
                _position += 3;
                negative = false;
                return result;
            case MessagePackCode.UInt32:
                result = ReadUInt32At(start);
                _position += 5;
                negative = false;
                return result;
            case MessagePackCode.UInt64:
                EnsureAvailable(9);
                result = BinaryPrimitives.ReadUInt64BigEndian(_data.Slice(start + 1, 8));
                _position += 9;
                negative = false;
                return result;
            case MessagePackCode.Int8:
                EnsureAvailable(2);
                long int8 = (sbyte)_data[start + 1];
                _position += 2;
                negative = int8 < 0;
                return (ulong)int8;
            case MessagePackCode.Int16:
                EnsureAvailable(3);
                long int16 = BinaryPrimitives.ReadInt16BigEndian(_data.Slice(start + 1, 2));
                _position += 3;
                negative = int16 < 0;
                return (ulong)int16;
            case MessagePackCode.Int32:
                EnsureAvailable(5);
                long int32 = BinaryPrimitives.ReadInt32BigEndian(_data.Slice(start + 1, 4));
                _position += 5;
                negative = int32 < 0;
                return (ulong)int32;
            case MessagePackCode.Int64:
                EnsureAvailable(9);
                long int64 = BinaryPrimitives.ReadInt64BigEndian(_data.Slice(start + 1, 8));
                _position += 9;
                negative = int64 < 0;
                return (ulong)int64;
            default:
                MessagePackThrow.TypeMismatch("Integer", code, start);
                negative = false;
                return 0;
        }
    }

    private readonly ushort ReadUInt16At(int start)
    {
        EnsureAvailable(3);
        return BinaryPrimitives.ReadUInt16BigEndian(_data.Slice(start + 1, 2));
    }

    private readonly uint ReadUInt32At(int start)
    {
        EnsureAvailable(5);
        return BinaryPrimitives.ReadUInt32BigEndian(_data.Slice(start + 1, 4));
    }

    private ReadOnlySpan<byte> ReadPayload(int headerSize, long length)
    {
        int remaining = _data.Length - _position - headerSize;
        if (length > remaining)
        {
            // Checked before slicing or copying, so a hostile length never reaches an allocation.
            MessagePackThrow.EndOfData(_position, length - remaining);
        }

        ReadOnlySpan<byte> slice = _data.Slice(_position + headerSize, (int)length);
        _position += headerSize + (int)length;
        return slice;
    }

    private void SkipBytes(int count)
    {
        EnsureAvailable(count);
        _position += count;
    }

    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private readonly byte PeekCode()
    {
        if ((uint)_position >= (uint)_data.Length)
        {
            MessagePackThrow.EndOfData(_position, 1);
        }

        return _data[_position];
    }

    /// <summary>Checks that <paramref name="count"/> bytes remain from the current position.</summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private readonly void EnsureAvailable(long count)
    {
        int remaining = _data.Length - _position;
        if (count > remaining)
        {
            MessagePackThrow.EndOfData(_position, count - remaining);
        }
    }
}
