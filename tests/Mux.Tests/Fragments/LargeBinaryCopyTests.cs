using System.Buffers;
using System.Runtime.InteropServices;
using MessagePack;
using Mux.Connection;
using Mux.Protocol;
using Mux.Serialization;

namespace Mux.Tests.Fragments;

/// <summary>
/// A large binary (<c>byte[]</c>, <c>ReadOnlyMemory&lt;byte&gt;</c>, <c>ReadOnlySequence&lt;byte&gt;</c>) is copied once on
/// each side: the sender's writer reads the caller's own memory as it writes each fragment, and the receiver's reader
/// lands the bytes, fragment by fragment, in the array the formatter then returns. Everything runs on the test's thread
/// through the code a connection runs (FrameWriter, MessageBufferWriter, OutboundMessage, FrameReader, MessageReassembly,
/// Mux's serializer options).
/// </summary>
public sealed class LargeBinaryCopyTests
{
    private const int MiB = 1024 * 1024;
    private const int FragmentSize = 64 * 1024;

    private static readonly MessagePackSerializerOptions s_options = MuxSerializerOptions.ForClient(MessagePackSerializerOptions.Standard);

    public static TheoryData<string> Types => ["byte[]", "ReadOnlyMemory<byte>", "ReadOnlySequence<byte>"];

    [Theory]
    [MemberData(nameof(Types))]
    public void ALargeBinary_IsReadFromTheCallersMemoryWhenItsFragmentsAreWritten_NotCopiedWhenTheMessageIsEncoded(string type)
    {
        byte[] data = BlobService.Pattern(MiB);
        OutboundMessage message = type switch
        {
            "byte[]" => Encode(data),
            "ReadOnlyMemory<byte>" => Encode((ReadOnlyMemory<byte>)data),
            _ => Encode(ThreePieces(data)),
        };

        // Changed after encoding, before any fragment is written: the wire carries the bytes as they are now.
        data.AsSpan(300_000, 100_000).Fill(0x5A);
        MessageReassembly received = Reassemble(message);
        byte[] value = MessagePackSerializer.Deserialize<byte[]>(received.Payload, s_options)!;
        received.Release();

        Assert.Equal(data, value);
    }

    [Theory]
    [MemberData(nameof(Types))]
    public void ALargeBinary_IsReturnedInTheArrayItsFragmentsLandedIn_NotCopiedAgain_AndOnlyOnce(string type)
    {
        byte[] data = BlobService.Pattern(MiB + 17);
        MessageReassembly received = Reassemble(Encode(data));
        ReadOnlySequence<byte> payload = received.Payload;

        byte[] array = type switch
        {
            "byte[]" => MessagePackSerializer.Deserialize<byte[]>(payload, s_options)!,
            "ReadOnlyMemory<byte>" => ArrayOf(MessagePackSerializer.Deserialize<ReadOnlyMemory<byte>>(payload, s_options)),
            _ => ArrayOf(MessagePackSerializer.Deserialize<ReadOnlySequence<byte>>(payload, s_options)),
        };

        // A second read of the same bytes gets its own copy: two callers never share one array.
        byte[] again = MessagePackSerializer.Deserialize<byte[]>(payload, s_options)!;
        bool landed = Arrays(payload).Any(segment => ReferenceEquals(segment, array));
        bool againLanded = Arrays(payload).Any(segment => ReferenceEquals(segment, again));
        received.Release();

        Assert.Equal(data, array);
        Assert.Equal(data, again);
        Assert.True(landed, "The value returned is not the array its bytes arrived in: they were copied again.");
        Assert.False(againLanded, "A second read of the bytes returned the same array as the first.");
    }

    [Fact]
    public void TwoLargeBinariesAmongOtherArguments_EachLandInTheirOwnArray_AndEveryValueReadsBackIntact()
    {
        byte[] first = BlobService.Pattern((2 * MiB) + 3);
        byte[] second = BlobService.Pattern(FragmentSize + 1);
        second[0] = 0xC6; // The bin32 code, as a byte of data: data is never read as MessagePack.
        var arguments = (42, first, "between", second, new[] { 1, 2, 3 });
        MessageReassembly received = Reassemble(Encode(arguments));
        ReadOnlySequence<byte> payload = received.Payload;

        (int number, byte[] a, string text, byte[] b, int[] list) = MessagePackSerializer.Deserialize<(int, byte[], string, byte[], int[])>(payload, s_options);
        bool aLanded = Arrays(payload).Any(segment => ReferenceEquals(segment, a));
        bool bLanded = Arrays(payload).Any(segment => ReferenceEquals(segment, b));
        received.Release();

        Assert.Equal(42, number);
        Assert.Equal(first, a);
        Assert.Equal("between", text);
        Assert.Equal(second, b);
        Assert.Equal([1, 2, 3], list);
        Assert.True(aLanded && bLanded, $"Landed: first {aLanded}, second {bLanded}.");
    }

    [Fact]
    public void WithCompression_ALargeBinaryIsCopiedIntoTheCompressedMessage_AndReadsBackIntact()
    {
        MessagePackSerializerOptions compressed = MuxSerializerOptions.ForClient(
            MessagePackSerializerOptions.Standard.WithCompression(MessagePackCompression.Lz4BlockArray));
        byte[] data = new byte[MiB];
        new Random(38).NextBytes(data); // Incompressible: the message stays over a fragment.
        OutboundMessage message = Encode(data, compressed);

        // Compression read the bytes while encoding: a change now is not sent.
        byte[] original = (byte[])data.Clone();
        data.AsSpan(0, 1000).Fill(0x5A);
        MessageReassembly received = Reassemble(message);
        byte[] value = MessagePackSerializer.Deserialize<byte[]>(received.Payload, compressed)!;
        received.Release();

        Assert.Equal(original, value);
    }

    [Fact]
    public void ABinHeaderThatAnnouncesMoreThanTheMessageHolds_LandsNothing_AndTheBytesReadBackAsSent()
    {
        // A payload that looks like a bin32 of 16 MiB at its start but is only 1 MiB: nothing is allocated for the 16 MiB.
        byte[] payload = BlobService.Pattern(MiB);
        payload[0] = 0xC6;
        payload[1] = 0x01; // 16 MiB, big-endian.
        payload[2] = 0x00;
        payload[3] = 0x00;
        payload[4] = 0x00;
        var first = new Frame(FrameType.Response, FrameFlags.MoreFragments, 7, 0, new ReadOnlySequence<byte>(payload.AsMemory(0, 1000)), messageSize: (uint)payload.Length, payloadSize: payload.Length);
        var message = new MessageReassembly(first, skip: false);
        message.Append(new ReadOnlySequence<byte>(payload.AsMemory(1000)));

        Assert.Equal(payload, message.Payload.ToArray());
        Assert.All(Arrays(message.Payload), array => Assert.True(array.Length <= BufferSegmentPool.SegmentSize, $"An array of {array.Length} bytes."));
        message.Release();
    }

    internal static OutboundMessage Encode<T>(T value, MessagePackSerializerOptions? options = null)
    {
        var writer = new MessageBufferWriter(BufferSegmentPool.Shared);
        writer.Start(new PooledBufferWriter());
        var body = new MessagePackBody<T>(value, options ?? s_options);
        long length = FrameWriter.Write(writer, FrameType.Response, 7, 0, ref body);
        return new OutboundMessage(writer.Detach(), length, FragmentSize, BufferSegmentPool.Shared);
    }

    // Writes the message's fragments one at a time and reads each back into a reassembly, as a connection would.
    internal static MessageReassembly Reassemble(OutboundMessage message)
    {
        var wire = new ArrayBufferWriter<byte>(2 * FragmentSize);
        MessageReassembly? reassembly = null;
        bool last;
        do
        {
            wire.ResetWrittenCount();
            last = message.WriteNextFragment(wire);
            var buffer = new ReadOnlySequence<byte>(wire.WrittenMemory);
            Assert.True(FrameReader.TryRead(ref buffer, FragmentSize + 64, out Frame frame));
            if (reassembly is null)
            {
                reassembly = new MessageReassembly(frame, skip: false);
            }
            else
            {
                reassembly.Append(frame.Payload);
            }
        }
        while (!last);

        message.Dispose();
        Assert.Equal(reassembly.Header.PayloadSize, reassembly.Received);
        return reassembly;
    }

    internal static ReadOnlySequence<byte> ThreePieces(byte[] data)
    {
        int third = data.Length / 3;
        var first = new Piece(data.AsMemory(0, third), 0);
        Piece second = first.Append(data.AsMemory(third, third));
        Piece last = second.Append(data.AsMemory(2 * third));
        return new ReadOnlySequence<byte>(first, 0, last, last.Memory.Length);
    }

    private static byte[] ArrayOf(ReadOnlyMemory<byte> memory)
    {
        Assert.True(MemoryMarshal.TryGetArray(memory, out ArraySegment<byte> segment));
        Assert.Equal(0, segment.Offset);
        return segment.Array!;
    }

    private static byte[] ArrayOf(ReadOnlySequence<byte> sequence)
    {
        Assert.True(sequence.IsSingleSegment);
        return ArrayOf(sequence.First);
    }

    private static List<byte[]> Arrays(ReadOnlySequence<byte> payload)
    {
        var arrays = new List<byte[]>();
        foreach (ReadOnlyMemory<byte> segment in payload)
        {
            if (MemoryMarshal.TryGetArray(segment, out ArraySegment<byte> array))
            {
                arrays.Add(array.Array!);
            }
        }

        return arrays;
    }

    private sealed class Piece : ReadOnlySequenceSegment<byte>
    {
        public Piece(ReadOnlyMemory<byte> memory, long runningIndex)
        {
            Memory = memory;
            RunningIndex = runningIndex;
        }

        public Piece Append(ReadOnlyMemory<byte> memory)
        {
            var next = new Piece(memory, RunningIndex + Memory.Length);
            Next = next;
            return next;
        }
    }
}
