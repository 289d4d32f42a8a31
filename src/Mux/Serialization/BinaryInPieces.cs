using System.Buffers;
using System.Buffers.Binary;
using MessagePack;
using MessagePack.Formatters;
using Mux.Diagnostics;
using Mux.Protocol;

namespace Mux.Serialization;

/// <summary>
/// Writes bytes as MessagePack bin exactly as MessagePack-CSharp's formatters do, but in pieces: theirs ask for the whole
/// payload as one contiguous span, which would force a large message into one large array again. A large binary is not
/// copied at all but spliced in, for the writer to copy once. Reading is theirs, except that a bin that landed in its own
/// array is returned as that array. Used only where the resolver would return MessagePack's own formatters.
/// </summary>
internal static class BinaryInPieces
{
    // Below this, MessagePack's own one-span write is as good (and one span is at most 16 KiB).
    private const int InPiecesFrom = 16 * 1024;

    // One pooled segment's worth, so the segment a splice leaves half empty costs at most as much again as the binary.
    internal const int SpliceFrom = BufferSegmentPool.SegmentSize;

    /// <summary>Writes <paramref name="bytes"/> as bin: a bin16 or bin32 header, then the bytes in as many pieces as the
    /// writer's buffer hands out, or, for a large binary in a message Mux sends, none: the bytes are linked in place.</summary>
    public static void Write(ref MessagePackWriter writer, ReadOnlyMemory<byte> bytes, MessagePackSerializerOptions options)
    {
        if (bytes.Length < InPiecesFrom || writer.OldSpec)
        {
            writer.Write(bytes.Span); // OldSpec writes raw str instead of bin: leave that to MessagePack.
            return;
        }

        if (WriteHeaderForSplice(ref writer, bytes.Length, options) is { } message)
        {
            message.Splice(bytes);
            return;
        }

        writer.WriteRaw(bytes.Span);
        PayloadCopies.Serialized(bytes.Length);
    }

    /// <summary>Writes a sequence of bytes as one bin, as
    /// <see cref="Write(ref MessagePackWriter, ReadOnlyMemory{byte}, MessagePackSerializerOptions)"/>.</summary>

    public static void Write(ref MessagePackWriter writer, in ReadOnlySequence<byte> bytes, MessagePackSerializerOptions options)
    {
        if (bytes.Length < InPiecesFrom || writer.OldSpec)
        {
            writer.Write(bytes);
            return;
        }

        int length = checked((int)bytes.Length);
        MessageBufferWriter? message = WriteHeaderForSplice(ref writer, length, options);
        foreach (ReadOnlyMemory<byte> segment in bytes)
        {
            if (message is not null)
            {
                message.Splice(segment); // Every piece, small ones too: consecutive splices share no pooled segment.
            }
            else
            {
                writer.WriteRaw(segment.Span);
            }
        }

        if (message is null)
        {
            PayloadCopies.Serialized(length);
        }
    }

    /// <summary>Returns the message to splice into when this writer writes straight into it (not through compression nor a
    /// formatter's scratch writer: its flushed header is exactly what the message grew by). Else null, and the caller
    /// copies.</summary>
    private static MessageBufferWriter? WriteHeaderForSplice(ref MessagePackWriter writer, int length, MessagePackSerializerOptions options)
    {
        MessageBufferWriter? message = MessageBufferWriter.SpliceTarget;
        if (message is null || length < SpliceFrom || options.Compression != MessagePackCompression.None)
        {
            WriteHeader(ref writer, length);
            return null;
        }

        // Flushed, so the header is all the message gains below, and nothing written before the splice is left behind
        // in the writer's buffer to land after it.
        writer.Flush();
        long before = message.WrittenCount;
        WriteHeader(ref writer, length);
        writer.Flush();
        return message.WrittenCount - before == 5 ? message : null;
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

    /// <summary>When the next value is a bin whose bytes are exactly a landed segment not taken before, the reader moves
    /// past it. Else the reader is unmoved and the caller copies.</summary>
    internal static bool TryTakeLanded(ref MessagePackReader reader, out byte[] array)
    {
        array = [];
        if (reader.End || reader.NextCode != MessagePackCode.Bin32)
        {
            return false;
        }

        MessagePackReader peek = reader.CreatePeekReader();
        ReadOnlySequence<byte> bytes = peek.ReadBytes().GetValueOrDefault();
        if (bytes.Length < SpliceFrom || LandedSegment(bytes) is not { } landed || !landed.TryTakeLanded(out array))
        {
            PayloadCopies.Deserialized(bytes.Length); // The caller's formatter copies it.
            return false;
        }

        reader = peek;
        return true;
    }

    // The landed segment that holds exactly these bytes, if any. The reader may leave a position at the end of the segment
    // before instead of at the start of the next: both mean the same byte.
    private static BufferSegment? LandedSegment(in ReadOnlySequence<byte> bytes)
    {
        object? segment = bytes.Start.GetObject();
        int index = bytes.Start.GetInteger();
        if (segment is BufferSegment before && !before.IsLanded && index == before.Memory.Length)
        {
            segment = before.Next;
            index = 0;
        }

        return segment is BufferSegment { IsLanded: true } landed && index == 0 && landed.Array.Length == bytes.Length ? landed : null;
    }

    /// <summary>Reading is <paramref name="standard"/>'s, except that a bin that landed in its own array is returned as it.</summary>

    private abstract class InPieces<T>(IMessagePackFormatter<T> standard) : IMessagePackFormatter<T>
    {
        public IMessagePackFormatter<T> Standard { get; } = standard;

        public abstract void Serialize(ref MessagePackWriter writer, T value, MessagePackSerializerOptions options);

        public T Deserialize(ref MessagePackReader reader, MessagePackSerializerOptions options) =>
            TryTakeLanded(ref reader, out byte[] array) ? FromArray(array) : Standard.Deserialize(ref reader, options);

        // What the standard formatter returns for a copy of the bytes, made of the array itself.
        protected abstract T FromArray(byte[] array);
    }

    private sealed class ByteArrayInPieces() : InPieces<byte[]?>(ByteArrayFormatter.Instance)
    {
        protected override byte[]? FromArray(byte[] array) => array;

        public override void Serialize(ref MessagePackWriter writer, byte[]? value, MessagePackSerializerOptions options)
        {
            if (value is null)
            {
                writer.WriteNil();
                return;
            }

            Write(ref writer, value, options);
        }
    }

    private sealed class ReadOnlyMemoryInPieces() : InPieces<ReadOnlyMemory<byte>>(ByteReadOnlyMemoryFormatter.Instance)
    {
        protected override ReadOnlyMemory<byte> FromArray(byte[] array) => array;

        public override void Serialize(ref MessagePackWriter writer, ReadOnlyMemory<byte> value, MessagePackSerializerOptions options) =>
            Write(ref writer, value, options);
    }

    private sealed class MemoryInPieces() : InPieces<Memory<byte>>(ByteMemoryFormatter.Instance)
    {
        protected override Memory<byte> FromArray(byte[] array) => array;

        public override void Serialize(ref MessagePackWriter writer, Memory<byte> value, MessagePackSerializerOptions options) =>
            Write(ref writer, value, options);
    }

    private sealed class ArraySegmentInPieces() : InPieces<ArraySegment<byte>>(ByteArraySegmentFormatter.Instance)
    {
        protected override ArraySegment<byte> FromArray(byte[] array) => new(array);

        public override void Serialize(ref MessagePackWriter writer, ArraySegment<byte> value, MessagePackSerializerOptions options)
        {
            if (value.Array is null)
            {
                writer.WriteNil(); // As MessagePack's own: a default segment is nil.
                return;
            }

            Write(ref writer, value.AsMemory(), options);
        }
    }

    private sealed class ReadOnlySequenceInPieces() : InPieces<ReadOnlySequence<byte>>(ByteReadOnlySequenceFormatter.Instance)
    {
        protected override ReadOnlySequence<byte> FromArray(byte[] array) => new(array);

        public override void Serialize(ref MessagePackWriter writer, ReadOnlySequence<byte> value, MessagePackSerializerOptions options) =>
            Write(ref writer, value, options);
    }
}
