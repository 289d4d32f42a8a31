using System.Buffers;
using System.Buffers.Binary;
using MessagePack;
using MessagePack.Formatters;
using Mux.Diagnostics;
using Mux.Protocol;

namespace Mux.Serialization;

/// <summary>
/// Writes bytes (<c>byte[]</c>, <c>ReadOnlyMemory&lt;byte&gt;</c>, <c>Memory&lt;byte&gt;</c>,
/// <c>ArraySegment&lt;byte&gt;</c>, <c>ReadOnlySequence&lt;byte&gt;</c>) as MessagePack bin, byte
/// for byte as MessagePack-CSharp's own formatters write them, but in pieces. Its writer asks its
/// buffer for the header and the whole payload as one contiguous span (16 MiB and 5 bytes for a
/// 16 MiB array), which would force a large message's buffer to be one large array again; written
/// in pieces, the bytes flow into the 64 KiB segments of a MessageBufferWriter, and a large binary
/// is not copied there at all but linked in (spliced) for the connection's writer to copy once,
/// a fragment per turn. Reading is theirs, except that a large bin that a reassembled message
/// landed in an array of its own is returned as that array. Used in place of MessagePack's own
/// formatters only where the resolver would return exactly those (see <see cref="MuxResolver"/>);
/// a user's formatter for these types is kept.
/// </summary>
internal static class BinaryInPieces
{
    // Below this, MessagePack's own one-span write is as good (and one span is at most 16 KiB).
    private const int InPiecesFrom = 16 * 1024;

    // From this size a binary in a message being encoded into a MessageBufferWriter is spliced in, not copied: the writer
    // copies it once, fragment by fragment, into the socket's pipe. One pooled segment's worth, so that the segment a
    // splice leaves half empty costs at most as much again as the binary.
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

    /// <summary>Writes a sequence of bytes as one bin, as <see cref="Write(ref MessagePackWriter, ReadOnlyMemory{byte}, MessagePackSerializerOptions)"/>.</summary>
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

    /// <summary>Writes the bin header of <paramref name="length"/> bytes. Returns the message the writer writes into when
    /// the bytes may be spliced there: the frame's body is being encoded into it on this thread (FrameWriter), not through
    /// compression, and this writer is the one writing into it (its header, flushed, is exactly what the message grew by:
    /// a formatter may serialize into a scratch writer of its own). Else null, and the caller copies.</summary>
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

    /// <summary>The array a large bin arrived in, when the reader's next value is a bin whose bytes are exactly a landed
    /// segment of a reassembled message (MessageReassembly), not taken before: then the reader is moved past it. Else
    /// false, the reader unmoved, and the caller copies as MessagePack's own formatter does.</summary>
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

    /// <summary>Writes <typeparamref name="T"/> in pieces; reading is <paramref name="standard"/>'s, MessagePack's own
    /// formatter of <typeparamref name="T"/>, which this one replaces, except that a bin that landed in its own array is
    /// returned as that array, not copied again.</summary>
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
