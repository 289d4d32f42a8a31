using System.Buffers;
using System.Buffers.Binary;
using MessagePack;
using MessagePack.Formatters;

namespace Mux.Serialization;

/// <summary>
/// Writes bytes (<c>byte[]</c>, <c>ReadOnlyMemory&lt;byte&gt;</c>, <c>Memory&lt;byte&gt;</c>,
/// <c>ArraySegment&lt;byte&gt;</c>, <c>ReadOnlySequence&lt;byte&gt;</c>) as MessagePack bin, byte
/// for byte as MessagePack-CSharp's own formatters write them, but in pieces. Its writer asks its
/// buffer for the header and the whole payload as one contiguous span (16 MiB and 5 bytes for a
/// 16 MiB array), which would force a large message's buffer to be one large array again; written
/// in pieces, the bytes flow into the 64 KiB segments of a MessageBufferWriter. Reading is theirs,
/// unchanged. Used in place of MessagePack's own formatters only where the resolver would return
/// exactly those (see <see cref="MuxResolver"/>); a user's formatter for these types is kept.
/// </summary>
internal static class BinaryInPieces
{
    // Below this, MessagePack's own one-span write is as good (and one span is at most 16 KiB).
    private const int InPiecesFrom = 16 * 1024;

    /// <summary>Writes <paramref name="bytes"/> as bin: a bin16 or bin32 header, then the bytes in
    /// as many pieces as the writer's buffer hands out.</summary>
    public static void Write(ref MessagePackWriter writer, ReadOnlySpan<byte> bytes)
    {
        if (bytes.Length < InPiecesFrom || writer.OldSpec)
        {
            writer.Write(bytes); // OldSpec writes raw str instead of bin: leave that to MessagePack.
            return;
        }

        WriteHeader(ref writer, bytes.Length);
        writer.WriteRaw(bytes);
    }

    /// <summary>Writes a sequence of bytes as one bin, as <see cref="Write(ref MessagePackWriter, ReadOnlySpan{byte})"/>.</summary>
    public static void Write(ref MessagePackWriter writer, in ReadOnlySequence<byte> bytes)
    {
        if (bytes.Length < InPiecesFrom || writer.OldSpec)
        {
            writer.Write(bytes);
            return;
        }

        WriteHeader(ref writer, checked((int)bytes.Length));
        foreach (ReadOnlyMemory<byte> segment in bytes)
        {
            writer.WriteRaw(segment.Span);
        }
    }

    /// <summary>The replacement of MessagePack's own formatter of <typeparamref name="T"/> when
    /// <paramref name="formatter"/> is that one (the resolver left it as it was); else <paramref name="formatter"/>.</summary>
    public static IMessagePackFormatter<T>? Replace<T>(IMessagePackFormatter<T>? formatter) =>
        formatter is not null && Replacement<T>.Formatter is { } inPieces && ReferenceEquals(formatter, inPieces.Standard) ? inPieces : formatter;

    /// <summary>The bin header MessagePackWriter.WriteBinHeader writes for this length (bin16 up to
    /// 65,535 bytes, else bin32), without asking for room for the payload as it does.</summary>
    private static void WriteHeader(ref MessagePackWriter writer, int length)
    {
        Span<byte> header = writer.GetSpan(5);
        if (length <= ushort.MaxValue)
        {
            header[0] = MessagePackCode.Bin16;
            BinaryPrimitives.WriteUInt16BigEndian(header[1..], (ushort)length);
            writer.Advance(3);
        }
        else
        {
            header[0] = MessagePackCode.Bin32;
            BinaryPrimitives.WriteUInt32BigEndian(header[1..], (uint)length);
            writer.Advance(5);
        }
    }

    /// <summary>For a bytes type, the formatter that replaces MessagePack's own; null for every
    /// other type. Read once per type.</summary>
    private static class Replacement<T>
    {
        public static readonly InPieces<T>? Formatter = (InPieces<T>?)Of(typeof(T));

        private static object? Of(Type type) =>
            type == typeof(byte[]) ? new ByteArrayInPieces()
            : type == typeof(ReadOnlyMemory<byte>) ? new ReadOnlyMemoryInPieces()
            : type == typeof(Memory<byte>) ? new MemoryInPieces()
            : type == typeof(ArraySegment<byte>) ? new ArraySegmentInPieces()
            : type == typeof(ReadOnlySequence<byte>) ? new ReadOnlySequenceInPieces()
            : null;
    }

    /// <summary>Writes <typeparamref name="T"/> in pieces; reading is <paramref name="standard"/>'s,
    /// MessagePack's own formatter of <typeparamref name="T"/>, which this one replaces.</summary>
    private abstract class InPieces<T>(IMessagePackFormatter<T> standard) : IMessagePackFormatter<T>
    {
        public IMessagePackFormatter<T> Standard { get; } = standard;

        public abstract void Serialize(ref MessagePackWriter writer, T value, MessagePackSerializerOptions options);

        public T Deserialize(ref MessagePackReader reader, MessagePackSerializerOptions options) => Standard.Deserialize(ref reader, options);
    }

    private sealed class ByteArrayInPieces() : InPieces<byte[]?>(ByteArrayFormatter.Instance)
    {
        public override void Serialize(ref MessagePackWriter writer, byte[]? value, MessagePackSerializerOptions options)
        {
            if (value is null)
            {
                writer.WriteNil();
                return;
            }

            Write(ref writer, value);
        }
    }

    private sealed class ReadOnlyMemoryInPieces() : InPieces<ReadOnlyMemory<byte>>(ByteReadOnlyMemoryFormatter.Instance)
    {
        public override void Serialize(ref MessagePackWriter writer, ReadOnlyMemory<byte> value, MessagePackSerializerOptions options) =>
            Write(ref writer, value.Span);
    }

    private sealed class MemoryInPieces() : InPieces<Memory<byte>>(ByteMemoryFormatter.Instance)
    {
        public override void Serialize(ref MessagePackWriter writer, Memory<byte> value, MessagePackSerializerOptions options) =>
            Write(ref writer, value.Span);
    }

    private sealed class ArraySegmentInPieces() : InPieces<ArraySegment<byte>>(ByteArraySegmentFormatter.Instance)
    {
        public override void Serialize(ref MessagePackWriter writer, ArraySegment<byte> value, MessagePackSerializerOptions options)
        {
            if (value.Array is null)
            {
                writer.WriteNil(); // As MessagePack's own: a default segment is nil.
                return;
            }

            Write(ref writer, value.AsSpan());
        }
    }

    private sealed class ReadOnlySequenceInPieces() : InPieces<ReadOnlySequence<byte>>(ByteReadOnlySequenceFormatter.Instance)
    {
        public override void Serialize(ref MessagePackWriter writer, ReadOnlySequence<byte> value, MessagePackSerializerOptions options) =>
            Write(ref writer, value);
    }
}
