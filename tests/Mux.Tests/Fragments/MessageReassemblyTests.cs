using System.Buffers;
using Mux.Connection;
using Mux.Protocol;

namespace Mux.Tests.Fragments;

public sealed class MessageReassemblyTests
{
    [Fact]
    public void AMessageLargerThanOneSegment_ArrivingInOddSizedPiecesFromSplitBuffers_ReadsBackByteForByte()
    {
        const int Size = (10 * 1024 * 1024) + 12_345; // Many pooled segments, the last one partly filled.
        byte[] expected = BlobService.Pattern(Size);
        var message = new MessageReassembly(FirstFragment(expected.AsMemory(0, 1000), Size), skip: false);
        int offset = 1000;
        for (int piece = 0; offset < Size; piece++)
        {
            // Pieces of varying sizes, each in two buffers (as a fragment spanning two receives is),
            // so that pieces straddle segment boundaries.
            int length = Math.Min(Size - offset, 60_000 + (piece * 7919 % 20_000));
            message.Append(TwoSegments(expected.AsMemory(offset, length)));
            offset += length;
        }

        ReadOnlySequence<byte> payload = message.ToFrame().Payload;

        Assert.Equal(Size, message.Received);
        Assert.False(payload.IsSingleSegment);
        Assert.Equal(expected, payload.ToArray());
        Assert.True(message.IsWholePayload(payload));
        Assert.False(message.IsWholePayload(payload.Slice(1)));
        Assert.False(message.IsWholePayload(new ReadOnlySequence<byte>(payload.ToArray())));
        message.Release();
    }

    [Fact]
    public void AMessageThatFitsOneSegment_IsOneSegment()
    {
        byte[] expected = BlobService.Pattern(BufferSegmentPool.SegmentSize);
        var message = new MessageReassembly(FirstFragment(expected.AsMemory(0, 40_000), expected.Length), skip: false);
        message.Append(new ReadOnlySequence<byte>(expected.AsMemory(40_000)));

        ReadOnlySequence<byte> payload = message.ToFrame().Payload;

        Assert.True(payload.IsSingleSegment);
        Assert.Equal(expected, payload.ToArray());
        Assert.True(message.IsWholePayload(payload));
        message.Release();
    }

    [Fact]
    public void ASkippedMessage_CountsItsBytesAndKeepsNone()
    {
        var message = new MessageReassembly(FirstFragment(new byte[1000], 5000), skip: true);
        message.Append(new ReadOnlySequence<byte>(new byte[4000]));

        Assert.Equal(5000, message.Received);
        Assert.True(message.ToFrame().Payload.IsEmpty);
        Assert.False(message.IsWholePayload(ReadOnlySequence<byte>.Empty));
        message.Release();
    }

    private static Frame FirstFragment(ReadOnlyMemory<byte> firstPiece, int payloadSize) =>
        new(FrameType.Response, FrameFlags.MoreFragments, callId: 7, methodId: 0, new ReadOnlySequence<byte>(firstPiece), messageSize: (uint)payloadSize, payloadSize: payloadSize);

    private static ReadOnlySequence<byte> TwoSegments(ReadOnlyMemory<byte> bytes)
    {
        int half = bytes.Length / 3;
        var first = new Segment(bytes[..half], 0);
        Segment second = first.Append(bytes[half..]);
        return new ReadOnlySequence<byte>(first, 0, second, second.Memory.Length);
    }

    private sealed class Segment : ReadOnlySequenceSegment<byte>
    {
        public Segment(ReadOnlyMemory<byte> memory, long runningIndex)
        {
            Memory = memory;
            RunningIndex = runningIndex;
        }

        public Segment Append(ReadOnlyMemory<byte> memory)
        {
            var next = new Segment(memory, RunningIndex + Memory.Length);
            Next = next;
            return next;
        }
    }
}
