using System.Buffers;
using System.Buffers.Binary;
using System.Runtime.CompilerServices;
using System.Text;

namespace Mux.Serialization;

/// <summary>
/// Writes MessagePack to an <see cref="IBufferWriter{T}"/>. Every write asks the output for a span
/// and advances it at once, so there is no internal buffer and nothing to flush.
/// </summary>
/// <remarks>Integers are always written in the smallest encoding that holds the value.</remarks>
public ref struct MessagePackWriter
{
    // Strings up to this many chars may be encoded against a 3-bytes-per-char bound instead of
    // being measured first; larger ones are measured so the output is not asked for 3x the space.
    private const int MaxCharsForBoundEncoding = 21845;

    private const long UnixEpochTicks = 621_355_968_000_000_000;

    private readonly IBufferWriter<byte> _output;
    private long _bytesWritten;

    /// <summary>Creates a writer that appends to <paramref name="output"/>.</summary>
    /// <param name="output">Where the encoded bytes go.</param>
    public MessagePackWriter(IBufferWriter<byte> output)
    {
        ArgumentNullException.ThrowIfNull(output);
        _output = output;
        _bytesWritten = 0;
    }

    /// <summary>Gets the total number of bytes this writer has written.</summary>
    public readonly long BytesWritten => _bytesWritten;

    /// <summary>Writes nil.</summary>
    public void WriteNil() => WriteByteCore(MessagePackCode.Nil);

    /// <summary>Writes a boolean.</summary>
    /// <param name="value">The value to write.</param>
    public void Write(bool value) => WriteByteCore(value ? MessagePackCode.True : MessagePackCode.False);

    /// <summary>Writes an unsigned 8-bit integer in its smallest encoding.</summary>
    /// <param name="value">The value to write.</param>
    public void Write(byte value)
    {
        if (value <= MessagePackCode.MaxFixInt)
        {
            WriteByteCore(value);
        }
        else
        {
            Span<byte> span = GetSpan(2);
            span[0] = MessagePackCode.UInt8;
            span[1] = value;
            Advance(2);
        }
    }

    /// <summary>Writes a signed 8-bit integer in its smallest encoding.</summary>
    /// <param name="value">The value to write.</param>
    public void Write(sbyte value) => Write((long)value);

    /// <summary>Writes a signed 16-bit integer in its smallest encoding.</summary>
    /// <param name="value">The value to write.</param>
    public void Write(short value) => Write((long)value);

    /// <summary>Writes an unsigned 16-bit integer in its smallest encoding.</summary>
    /// <param name="value">The value to write.</param>
    public void Write(ushort value) => Write((ulong)value);

    /// <summary>Writes a signed 32-bit integer in its smallest encoding.</summary>
    /// <param name="value">The value to write.</param>
    public void Write(int value) => Write((long)value);

    /// <summary>Writes an unsigned 32-bit integer in its smallest encoding.</summary>
    /// <param name="value">The value to write.</param>
    public void Write(uint value) => Write((ulong)value);

    /// <summary>Writes a signed 64-bit integer in its smallest encoding.</summary>
    /// <param name="value">The value to write.</param>
    public void Write(long value)
    {
        if (value >= 0)
        {
            Write((ulong)value);
        }
        else if (value >= -32)
        {
            // Negative fixint: the low byte of the two's complement value is the whole encoding.
            WriteByteCore(unchecked((byte)value));
        }
        else
        {
            WriteNegative(value);
        }
    }

    /// <summary>Writes an unsigned 64-bit integer in its smallest encoding.</summary>
    /// <param name="value">The value to write.</param>
    public void Write(ulong value)
    {
        if (value <= MessagePackCode.MaxFixInt)
        {
            WriteByteCore((byte)value);
            return;
        }

        Span<byte> span;
        if (value <= byte.MaxValue)
        {
            span = GetSpan(2);
            span[0] = MessagePackCode.UInt8;
            span[1] = (byte)value;
            Advance(2);
        }
        else if (value <= ushort.MaxValue)
        {
            span = GetSpan(3);
            span[0] = MessagePackCode.UInt16;
            BinaryPrimitives.WriteUInt16BigEndian(span[1..], (ushort)value);
            Advance(3);
        }
        else if (value <= uint.MaxValue)
        {
            span = GetSpan(5);
            span[0] = MessagePackCode.UInt32;
            BinaryPrimitives.WriteUInt32BigEndian(span[1..], (uint)value);
            Advance(5);
        }
        else
        {
            span = GetSpan(9);
            span[0] = MessagePackCode.UInt64;
            BinaryPrimitives.WriteUInt64BigEndian(span[1..], value);
            Advance(9);
        }
    }

    /// <summary>Writes a 32-bit float (float32).</summary>
    /// <param name="value">The value to write.</param>
    public void Write(float value)
    {
        Span<byte> span = GetSpan(5);
        span[0] = MessagePackCode.Float32;
        BinaryPrimitives.WriteSingleBigEndian(span[1..], value);
        Advance(5);
    }

    /// <summary>Writes a 64-bit float (float64).</summary>
    /// <param name="value">The value to write.</param>
    public void Write(double value)
    {
        Span<byte> span = GetSpan(9);
        span[0] = MessagePackCode.Float64;
        BinaryPrimitives.WriteDoubleBigEndian(span[1..], value);
        Advance(9);
    }

    /// <summary>Writes a char as its UTF-16 code unit, an unsigned 16-bit integer.</summary>
    /// <param name="value">The value to write.</param>
    public void Write(char value) => Write((ulong)value);

    /// <summary>Writes a string as UTF-8 (fixstr, str8, str16 or str32), or nil when it is <see langword="null"/>.</summary>
    /// <param name="value">The value to write.</param>
    public void Write(string? value)
    {
        if (value is null)
        {
            WriteNil();
            return;
        }

        int charCount = value.Length;

        // A UTF-16 string encodes to between 1 and 3 UTF-8 bytes per char (a surrogate pair is
        // 2 chars and 4 bytes). When both bounds need the same header we can encode straight into
        // the output and fill the header in afterwards, without measuring the string first.
        if (charCount <= MaxCharsForBoundEncoding)
        {
            int maxByteCount = charCount * 3;
            int headerSize = StrHeaderSize(maxByteCount);
            if (headerSize == StrHeaderSize(charCount))
            {
                Span<byte> span = GetSpan(headerSize + maxByteCount);
                int written = Encoding.UTF8.GetBytes(value, span[headerSize..]);
                WriteStrHeader(span, headerSize, written);
                Advance(headerSize + written);
                return;
            }
        }

        WriteStringMeasured(value);
    }

    /// <summary>Writes bytes as binary (bin8, bin16 or bin32).</summary>
    /// <param name="value">The bytes to write.</param>
    public void Write(scoped ReadOnlySpan<byte> value)
    {
        int length = value.Length;
        int headerSize = length <= byte.MaxValue ? 2 : length <= ushort.MaxValue ? 3 : 5;
        Span<byte> span = GetSpan(headerSize + length);
        switch (headerSize)
        {
            case 2:
                span[0] = MessagePackCode.Bin8;
                span[1] = (byte)length;
                break;
            case 3:
                span[0] = MessagePackCode.Bin16;
                BinaryPrimitives.WriteUInt16BigEndian(span[1..], (ushort)length);
                break;
            default:
                span[0] = MessagePackCode.Bin32;
                BinaryPrimitives.WriteUInt32BigEndian(span[1..], (uint)length);
                break;
        }

        value.CopyTo(span[headerSize..]);
        Advance(headerSize + length);
    }

    /// <summary>Writes a byte array as binary, or nil when it is <see langword="null"/>.</summary>
    /// <param name="value">The bytes to write.</param>
    public void WriteBinary(byte[]? value)
    {
        if (value is null)
        {
            WriteNil();
        }
        else
        {
            Write(value.AsSpan());
        }
    }

    /// <summary>
    /// Writes a <see cref="DateTime"/> as a timestamp extension (type -1) in the smallest of the
    /// 32, 64 and 96-bit forms. Local times are converted to UTC; unspecified times are taken to be UTC already.
    /// </summary>
    /// <param name="value">The value to write.</param>
    public void Write(DateTime value)
    {
        if (value.Kind == DateTimeKind.Local)
        {
            value = value.ToUniversalTime();
        }

        long ticks = value.Ticks - UnixEpochTicks;
        long seconds = ticks / TimeSpan.TicksPerSecond;
        long remainder = ticks % TimeSpan.TicksPerSecond;
        if (remainder < 0)
        {
            // The timestamp's nanoseconds are never negative: borrow a second for times before 1970.
            remainder += TimeSpan.TicksPerSecond;
            seconds--;
        }

        uint nanoseconds = (uint)(remainder * 100);
        Span<byte> span;
        if (((ulong)seconds >> 34) == 0)
        {
            if (nanoseconds == 0 && ((ulong)seconds >> 32) == 0)
            {
                span = GetSpan(6);
                span[0] = MessagePackCode.FixExt4;
                span[1] = unchecked((byte)MessagePackCode.TimestampTypeCode);
                BinaryPrimitives.WriteUInt32BigEndian(span[2..], (uint)seconds);
                Advance(6);
            }
            else
            {
                span = GetSpan(10);
                span[0] = MessagePackCode.FixExt8;
                span[1] = unchecked((byte)MessagePackCode.TimestampTypeCode);
                BinaryPrimitives.WriteUInt64BigEndian(span[2..], ((ulong)nanoseconds << 34) | (ulong)seconds);
                Advance(10);
            }
        }
        else
        {
            span = GetSpan(15);
            span[0] = MessagePackCode.Ext8;
            span[1] = 12;
            span[2] = unchecked((byte)MessagePackCode.TimestampTypeCode);
            BinaryPrimitives.WriteUInt32BigEndian(span[3..], nanoseconds);
            BinaryPrimitives.WriteInt64BigEndian(span[7..], seconds);
            Advance(15);
        }
    }

    /// <summary>Writes an array header; the caller then writes <paramref name="count"/> values.</summary>
    /// <param name="count">The number of elements that follow.</param>
    public void WriteArrayHeader(int count)
    {
        if (count < 0)
        {
            MessagePackThrow.NegativeLength(nameof(count));
        }

        WriteCollectionHeader(count, MessagePackCode.MinFixArray, MessagePackCode.Array16);
    }

    /// <summary>Writes a map header; the caller then writes <paramref name="count"/> key/value pairs.</summary>
    /// <param name="count">The number of key/value pairs that follow.</param>
    public void WriteMapHeader(int count)
    {
        if (count < 0)
        {
            MessagePackThrow.NegativeLength(nameof(count));
        }

        WriteCollectionHeader(count, MessagePackCode.MinFixMap, MessagePackCode.Map16);
    }

    /// <summary>
    /// Writes an extension header (fixext when the length allows it, else ext8/16/32); the caller
    /// then writes <paramref name="length"/> bytes of payload with <see cref="WriteRaw"/>.
    /// </summary>
    /// <param name="typeCode">The extension type code.</param>
    /// <param name="length">The payload length in bytes.</param>
    public void WriteExtensionHeader(sbyte typeCode, int length)
    {
        if (length < 0)
        {
            MessagePackThrow.NegativeLength(nameof(length));
        }

        byte type = unchecked((byte)typeCode);
        byte fixCode = length switch
        {
            1 => MessagePackCode.FixExt1,
            2 => MessagePackCode.FixExt2,
            4 => MessagePackCode.FixExt4,
            8 => MessagePackCode.FixExt8,
            16 => MessagePackCode.FixExt16,
            _ => 0,
        };

        Span<byte> span;
        if (fixCode != 0)
        {
            span = GetSpan(2);
            span[0] = fixCode;
            span[1] = type;
            Advance(2);
        }
        else if (length <= byte.MaxValue)
        {
            span = GetSpan(3);
            span[0] = MessagePackCode.Ext8;
            span[1] = (byte)length;
            span[2] = type;
            Advance(3);
        }
        else if (length <= ushort.MaxValue)
        {
            span = GetSpan(4);
            span[0] = MessagePackCode.Ext16;
            BinaryPrimitives.WriteUInt16BigEndian(span[1..], (ushort)length);
            span[3] = type;
            Advance(4);
        }
        else
        {
            span = GetSpan(6);
            span[0] = MessagePackCode.Ext32;
            BinaryPrimitives.WriteUInt32BigEndian(span[1..], (uint)length);
            span[5] = type;
            Advance(6);
        }
    }

    /// <summary>Copies bytes that are already MessagePack (or an extension payload) to the output unchanged.</summary>
    /// <param name="bytes">The bytes to copy.</param>
    public void WriteRaw(scoped ReadOnlySpan<byte> bytes)
    {
        if (bytes.IsEmpty)
        {
            return;
        }

        Span<byte> span = GetSpan(bytes.Length);
        bytes.CopyTo(span);
        Advance(bytes.Length);
    }

    /// <summary>Writes a string header followed by bytes that are already UTF-8.</summary>
    internal void WriteString(scoped ReadOnlySpan<byte> utf8)
    {
        int headerSize = StrHeaderSize(utf8.Length);
        Span<byte> span = GetSpan(headerSize + utf8.Length);
        WriteStrHeader(span, headerSize, utf8.Length);
        utf8.CopyTo(span[headerSize..]);
        Advance(headerSize + utf8.Length);
    }

    private void WriteStringMeasured(string value)
    {
        int byteCount = Encoding.UTF8.GetByteCount(value);
        int headerSize = StrHeaderSize(byteCount);
        Span<byte> span = GetSpan(headerSize + byteCount);
        int written = Encoding.UTF8.GetBytes(value, span[headerSize..]);
        WriteStrHeader(span, headerSize, written);
        Advance(headerSize + written);
    }

    private void WriteNegative(long value)
    {
        Span<byte> span;
        if (value >= sbyte.MinValue)
        {
            span = GetSpan(2);
            span[0] = MessagePackCode.Int8;
            span[1] = unchecked((byte)value);
            Advance(2);
        }
        else if (value >= short.MinValue)
        {
            span = GetSpan(3);
            span[0] = MessagePackCode.Int16;
            BinaryPrimitives.WriteInt16BigEndian(span[1..], (short)value);
            Advance(3);
        }
        else if (value >= int.MinValue)
        {
            span = GetSpan(5);
            span[0] = MessagePackCode.Int32;
            BinaryPrimitives.WriteInt32BigEndian(span[1..], (int)value);
            Advance(5);
        }
        else
        {
            span = GetSpan(9);
            span[0] = MessagePackCode.Int64;
            BinaryPrimitives.WriteInt64BigEndian(span[1..], value);
            Advance(9);
        }
    }

    private void WriteCollectionHeader(int count, byte fixCode, byte code16)
    {
        Span<byte> span;
        if (count <= 15)
        {
            WriteByteCore((byte)(fixCode | count));
        }
        else if (count <= ushort.MaxValue)
        {
            span = GetSpan(3);
            span[0] = code16;
            BinaryPrimitives.WriteUInt16BigEndian(span[1..], (ushort)count);
            Advance(3);
        }
        else
        {
            // The 32-bit code always directly follows the 16-bit one (0xdc/0xdd, 0xde/0xdf).
            span = GetSpan(5);
            span[0] = (byte)(code16 + 1);
            BinaryPrimitives.WriteUInt32BigEndian(span[1..], (uint)count);
            Advance(5);
        }
    }

    private static int StrHeaderSize(int byteCount) =>
        byteCount <= 31 ? 1 : byteCount <= byte.MaxValue ? 2 : byteCount <= ushort.MaxValue ? 3 : 5;

    private static void WriteStrHeader(Span<byte> span, int headerSize, int byteCount)
    {
        switch (headerSize)
        {
            case 1:
                span[0] = (byte)(MessagePackCode.MinFixStr | byteCount);
                break;
            case 2:
                span[0] = MessagePackCode.Str8;
                span[1] = (byte)byteCount;
                break;
            case 3:
                span[0] = MessagePackCode.Str16;
                BinaryPrimitives.WriteUInt16BigEndian(span[1..], (ushort)byteCount);
                break;
            default:
                span[0] = MessagePackCode.Str32;
                BinaryPrimitives.WriteUInt32BigEndian(span[1..], (uint)byteCount);
                break;
        }
    }

    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private void WriteByteCore(byte value)
    {
        Span<byte> span = GetSpan(1);
        span[0] = value;
        Advance(1);
    }

    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private readonly Span<byte> GetSpan(int size) => _output.GetSpan(size);

    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private void Advance(int count)
    {
        _output.Advance(count);
        _bytesWritten += count;
    }
}
