using System.Buffers;
using System.Buffers.Binary;
using Mux.Protocol;
using MessagePack;
using static Mux.Tests.Protocol.ProtocolTestHelpers;

namespace Mux.Tests.Protocol;

public class FrameReaderTests
{
    private const int MaxFrameSize = 64 * 1024;

    /// <summary>A valid frame as written by <see cref="FrameWriter"/>, and what the reader must make of it.</summary>
    private sealed record FrameCase(byte[] Bytes, FrameType Type, uint CallId, uint MethodId, byte[] Payload);

    private static readonly Dictionary<string, FrameCase> s_cases = BuildCases();

    public static TheoryData<string> FrameKinds => new(s_cases.Keys);

    private static Dictionary<string, FrameCase> BuildCases()
    {
        var helloSettings = new HandshakeSettings(ProtocolConstants.Version, 65536, 100, "token");
        var ackSettings = new HandshakeSettings(ProtocolConstants.Version, 4096, int.MaxValue, null);
        byte[] requestArgs = [0x92, 0x02, 0x03];
        byte[] responseBody = [0x05];
        byte[] largeResponse = Enumerable.Range(0, 5000).Select(static i => (byte)(i * 7)).ToArray();
        var error = new ErrorBody(MuxStatusCode.UnknownMethod, "no such method", "System.InvalidOperationException");
        byte[] ping = [1, 2, 3, 4, 5, 6, 7, 8];
        byte[] pong = [0xff, 0xfe, 0xfd, 0xfc, 0xfb, 0xfa, 0xf9, 0xf8];
        byte[] goAway = new byte[4];
        BinaryPrimitives.WriteUInt32LittleEndian(goAway, 123456);
        byte[] item = [0xa3, 0x61, 0x62, 0x63];
        byte[] credit = new byte[4];
        BinaryPrimitives.WriteUInt32LittleEndian(credit, 32);
        var streamFailed = new ErrorBody(MuxStatusCode.HandlerFailed, "the client's stream failed", null);

        return new Dictionary<string, FrameCase>
        {
            ["Hello"] = new(WriteHelloFrame(FrameType.Hello, helloSettings), FrameType.Hello, 0, 0, EncodeBody(helloSettings)),
            ["HelloAck"] = new(WriteHelloFrame(FrameType.HelloAck, ackSettings), FrameType.HelloAck, 0, 0, EncodeBody(ackSettings)),
            ["Request"] = new(WriteFrame(FrameType.Request, 42, 0xa063e920, new RawBody(requestArgs)), FrameType.Request, 42, 0xa063e920, requestArgs),
            ["RequestWithEmptyBody"] = new(WriteFrame(FrameType.Request, 1, 0xffffffff, new RawBody([])), FrameType.Request, 1, 0xffffffff, []),
            ["Response"] = new(WriteFrame(FrameType.Response, 0xffffffff, 0, new RawBody(responseBody)), FrameType.Response, 0xffffffff, 0, responseBody),
            ["LargeResponse"] = new(WriteRawFrame(FrameType.Response, 7, largeResponse), FrameType.Response, 7, 0, largeResponse),
            ["Error"] = new(WriteFrame(FrameType.Error, 3, 0, error), FrameType.Error, 3, 0, EncodeBody(error)),
            ["Cancel"] = new(WriteRawFrame(FrameType.Cancel, 9, []), FrameType.Cancel, 9, 0, []),
            ["Ping"] = new(WriteRawFrame(FrameType.Ping, 0, ping), FrameType.Ping, 0, 0, ping),
            ["Pong"] = new(WriteRawFrame(FrameType.Pong, 0, pong), FrameType.Pong, 0, 0, pong),
            ["GoAway"] = new(WriteRawFrame(FrameType.GoAway, 0, goAway), FrameType.GoAway, 0, 0, goAway),
            ["StreamItem"] = new(WriteRawFrame(FrameType.StreamItem, 11, item), FrameType.StreamItem, 11, 0, item),
            ["StreamEnd"] = new(WriteRawFrame(FrameType.StreamEnd, 11, []), FrameType.StreamEnd, 11, 0, []),
            ["StreamEndWithError"] = new(WriteFrame(FrameType.StreamEnd, 12, 0, streamFailed), FrameType.StreamEnd, 12, 0, EncodeBody(streamFailed)),
            ["StreamCredit"] = new(WriteRawFrame(FrameType.StreamCredit, 11, credit), FrameType.StreamCredit, 11, 0, credit),
            ["LastContinuation"] = new(WriteRawFrame(FrameType.Continuation, 5, responseBody), FrameType.Continuation, 5, 0, responseBody),
        };
    }

    /// <summary>A frame assembled by hand, so that it can break the rules FrameWriter keeps.</summary>
    private static byte[] HandMadeFrame(uint length, byte type, byte flags, uint callId, byte[] body)
    {
        byte[] bytes = new byte[ProtocolConstants.FrameHeaderSize + body.Length];
        BinaryPrimitives.WriteUInt32LittleEndian(bytes, length);
        bytes[4] = type;
        bytes[5] = flags;
        BinaryPrimitives.WriteUInt32LittleEndian(bytes.AsSpan(6), callId);
        body.CopyTo(bytes, ProtocolConstants.FrameHeaderSize);
        return bytes;
    }

    /// <summary>A frame whose length prefix matches its body.</summary>
    private static byte[] HandMadeFrame(FrameType type, byte[] body, byte flags = 0, uint callId = 1) =>
        HandMadeFrame((uint)(ProtocolConstants.CommonHeaderSize + body.Length), (byte)type, flags, callId, body);

    private static void AssertFrame(FrameCase expected, in Frame frame)
    {
        Assert.Equal(expected.Type, frame.Type);
        Assert.Equal(FrameFlags.None, frame.Flags);
        Assert.Equal(expected.CallId, frame.CallId);
        Assert.Equal(expected.MethodId, frame.MethodId);
        Assert.Equal(expected.Payload, frame.Payload.ToArray());
    }

    private static MuxProtocolException AssertRejected(byte[] bytes, string expectedFragment, int maxFrameSize = MaxFrameSize)
    {
        var buffer = new ReadOnlySequence<byte>(bytes);
        var ex = Assert.Throws<MuxProtocolException>(() => FrameReader.TryRead(ref buffer, maxFrameSize, out _));
        Assert.Contains(expectedFragment, ex.Message, StringComparison.Ordinal);
        return ex;
    }

    [Fact]
    public void FrameKinds_CoverEveryFrameType()
    {
        Assert.Equal(Enum.GetValues<FrameType>().Order(), s_cases.Values.Select(static c => c.Type).Distinct().Order());
    }

    [Theory]
    [MemberData(nameof(FrameKinds))]
    public void FrameWriter_WritesALengthPrefixThatCountsTheBytesAfterIt(string kind)
    {
        FrameCase c = s_cases[kind];
        Assert.Equal((uint)(c.Bytes.Length - ProtocolConstants.LengthPrefixSize), BinaryPrimitives.ReadUInt32LittleEndian(c.Bytes));
        Assert.Equal((byte)c.Type, c.Bytes[4]);
        Assert.Equal(0, c.Bytes[5]);
    }

    [Theory]
    [MemberData(nameof(FrameKinds))]
    public void TryRead_OnEveryTruncationPoint_ConsumesNothingAndReturnsFalse(string kind)
    {
        byte[] bytes = s_cases[kind].Bytes;
        for (int cut = 0; cut < bytes.Length; cut++)
        {
            var original = new ReadOnlySequence<byte>(bytes, 0, cut);
            ReadOnlySequence<byte> buffer = original;

            bool read = FrameReader.TryRead(ref buffer, MaxFrameSize, out Frame frame);

            Assert.False(read, $"{kind}: a frame was read from the first {cut} of {bytes.Length} bytes.");
            Assert.Equal(original.Length, buffer.Length);
            Assert.Equal(original.Start, buffer.Start);
            Assert.Equal(default(FrameType), frame.Type);
        }
    }

    [Theory]
    [MemberData(nameof(FrameKinds))]
    public void TryRead_OnACompleteFrame_ReturnsItAndConsumesExactlyTheFrame(string kind)
    {
        FrameCase c = s_cases[kind];
        var buffer = new ReadOnlySequence<byte>(c.Bytes);

        Assert.True(FrameReader.TryRead(ref buffer, MaxFrameSize, out Frame frame));

        AssertFrame(c, frame);
        Assert.True(buffer.IsEmpty);
        Assert.Equal(new ReadOnlySequence<byte>(c.Bytes).End, buffer.Start);
    }

    [Theory]
    [MemberData(nameof(FrameKinds))]
    public void TryRead_OnACompleteFrameFollowedByMore_LeavesTheRestUnconsumed(string kind)
    {
        FrameCase c = s_cases[kind];
        byte[] trailing = s_cases["Ping"].Bytes[..7];
        var buffer = new ReadOnlySequence<byte>(Concat(c.Bytes, trailing));

        Assert.True(FrameReader.TryRead(ref buffer, MaxFrameSize, out Frame frame));

        AssertFrame(c, frame);
        Assert.Equal(trailing, buffer.ToArray());
    }

    [Theory]
    [MemberData(nameof(FrameKinds))]
    public void TryRead_OnAFrameSplitAcrossTwoSegmentsAtEveryPoint_ParsesIdentically(string kind)
    {
        FrameCase c = s_cases[kind];
        for (int split = 0; split <= c.Bytes.Length; split++)
        {
            ReadOnlySequence<byte> buffer = TestSegment.Chain(c.Bytes[..split], c.Bytes[split..]);
            Assert.False(buffer.IsSingleSegment);

            Assert.True(FrameReader.TryRead(ref buffer, MaxFrameSize, out Frame frame), $"{kind}: no frame with a split at {split}.");

            AssertFrame(c, frame);
            Assert.True(buffer.IsEmpty, $"{kind}: {buffer.Length} bytes left with a split at {split}.");
        }
    }

    [Theory]
    [MemberData(nameof(FrameKinds))]
    public void TryRead_OnAFrameInOneByteSegments_ParsesIdentically(string kind)
    {
        FrameCase c = s_cases[kind];
        ReadOnlySequence<byte> buffer = TestSegment.Chain(c.Bytes.Select(static b => new[] { b }).ToArray());

        Assert.True(FrameReader.TryRead(ref buffer, MaxFrameSize, out Frame frame));

        AssertFrame(c, frame);
        Assert.True(buffer.IsEmpty);
    }

    [Theory]
    [MemberData(nameof(FrameKinds))]
    public void TryRead_OnEveryTruncationPointOfASegmentedFrame_ConsumesNothingAndReturnsFalse(string kind)
    {
        byte[] bytes = s_cases[kind].Bytes;
        ReadOnlySequence<byte> whole = TestSegment.Chain(bytes[..(bytes.Length / 2)], bytes[(bytes.Length / 2)..]);
        for (int cut = 0; cut < bytes.Length; cut++)
        {
            ReadOnlySequence<byte> original = whole.Slice(0, cut);
            ReadOnlySequence<byte> buffer = original;

            Assert.False(FrameReader.TryRead(ref buffer, MaxFrameSize, out _), $"{kind}: a frame was read from the first {cut} bytes.");
            Assert.Equal(original.Length, buffer.Length);
            Assert.Equal(original.Start, buffer.Start);
        }
    }

    [Fact]
    public void TryRead_OnSeveralFramesBackToBack_ReadsThemAllInOrder()
    {
        string[] order = ["Hello", "Request", "Ping", "Cancel", "Response", "Error", "LargeResponse", "GoAway", "Pong", "HelloAck", "RequestWithEmptyBody"];
        byte[] all = Concat(order.Select(k => s_cases[k].Bytes).ToArray());
        var buffer = new ReadOnlySequence<byte>(all);

        foreach (string kind in order)
        {
            Assert.True(FrameReader.TryRead(ref buffer, MaxFrameSize, out Frame frame), $"{kind} was not read.");
            AssertFrame(s_cases[kind], frame);
        }

        Assert.True(buffer.IsEmpty);
        Assert.False(FrameReader.TryRead(ref buffer, MaxFrameSize, out _));
    }

    [Fact]
    public void TryRead_OnFramesFollowedByAPartialFrame_ReadsTheCompleteOnesAndLeavesThePartialOneUnconsumed()
    {
        byte[] partial = s_cases["Request"].Bytes[..^1];
        byte[] all = Concat(s_cases["Ping"].Bytes, s_cases["Error"].Bytes, partial);
        ReadOnlySequence<byte> buffer = TestSegment.Chain(all[..5], all[5..20], all[20..]);

        Assert.True(FrameReader.TryRead(ref buffer, MaxFrameSize, out Frame first));
        AssertFrame(s_cases["Ping"], first);
        Assert.True(FrameReader.TryRead(ref buffer, MaxFrameSize, out Frame second));
        AssertFrame(s_cases["Error"], second);

        SequencePosition before = buffer.Start;
        Assert.False(FrameReader.TryRead(ref buffer, MaxFrameSize, out _));
        Assert.Equal(before, buffer.Start);
        Assert.Equal(partial, buffer.ToArray());
    }

    [Fact]
    public void TryRead_WithALengthEqualToTheMaximum_AcceptsTheFrame()
    {
        const int maxFrameSize = 4096;
        byte[] body = new byte[maxFrameSize - ProtocolConstants.CommonHeaderSize];
        var buffer = new ReadOnlySequence<byte>(HandMadeFrame(FrameType.Response, body));

        Assert.True(FrameReader.TryRead(ref buffer, maxFrameSize, out Frame frame));
        Assert.Equal(body.Length, frame.Payload.Length);
    }

    [Theory]
    [InlineData(4097u)]
    [InlineData(100_000u)]
    [InlineData(0x7fffffffu)]
    [InlineData(0xffffffffu)]
    public void TryRead_WithALengthOverTheMaximum_Throws(uint length)
    {
        // Enough bytes to cover the whole frame for the smaller lengths: the check must not depend on it.
        byte[] bytes = HandMadeFrame(length, (byte)FrameType.Response, 0, 1, new byte[5000]);

        var ex = AssertRejected(bytes, "exceeds the maximum frame size", maxFrameSize: 4096);
        Assert.Contains(length.ToString(System.Globalization.CultureInfo.InvariantCulture), ex.Message, StringComparison.Ordinal);
    }

    [Theory]
    [InlineData(4)]
    [InlineData(5)]
    [InlineData(6)]
    [InlineData(9)]
    [InlineData(10)]
    public void TryRead_WithAnOversizedLength_ThrowsAsSoonAsTheLengthHasArrived(int bytesArrived)
    {
        byte[] bytes = HandMadeFrame(0xffffffff, (byte)FrameType.Request, 0, 1, [])[..bytesArrived];

        AssertRejected(bytes, "exceeds the maximum frame size");
    }

    [Theory]
    [InlineData(1)]
    [InlineData(2)]
    [InlineData(3)]
    public void TryRead_WithFewerThanFourBytes_CannotSeeTheLengthAndReturnsFalse(int bytesArrived)
    {
        var buffer = new ReadOnlySequence<byte>(new byte[] { 0xff, 0xff, 0xff, 0xff }, 0, bytesArrived);

        Assert.False(FrameReader.TryRead(ref buffer, MaxFrameSize, out _));
        Assert.Equal(bytesArrived, buffer.Length);
    }

    [Theory]
    [InlineData(0u, 10)]
    [InlineData(5u, 10)]
    [InlineData(0u, 4)]
    [InlineData(5u, 4)]
    public void TryRead_WithALengthSmallerThanTheCommonHeader_Throws(uint length, int bytesArrived)
    {
        byte[] bytes = HandMadeFrame(length, (byte)FrameType.Ping, 0, 0, [])[..bytesArrived];

        AssertRejected(bytes, "smaller than the 6-byte frame header");
    }

    [Theory]
    [InlineData((byte)0)]
    [InlineData((byte)13)]
    [InlineData((byte)99)]
    [InlineData((byte)255)]
    public void TryRead_WithAnUnknownType_Throws(byte type)
    {
        byte[] bytes = HandMadeFrame(ProtocolConstants.CommonHeaderSize + 2, type, 0, 1, [0x90, 0x90]);

        var ex = AssertRejected(bytes, "Unknown frame type");
        Assert.Contains($"type {type}", ex.Message, StringComparison.Ordinal);
    }

    [Theory]
    [InlineData((byte)2)]
    [InlineData((byte)4)]
    [InlineData((byte)0x80)]
    [InlineData((byte)0xff)]
    public void TryRead_WithNonzeroFlags_Throws(byte flags)
    {
        byte[] bytes = HandMadeFrame(FrameType.Response, [0x05], flags);

        var ex = AssertRejected(bytes, $"are not supported by protocol version {ProtocolConstants.Version}");
        Assert.Contains($"0x{flags:x2}", ex.Message, StringComparison.Ordinal);
    }

    [Theory]
    [InlineData(0)]
    [InlineData(1)]
    [InlineData(3)]
    public void TryRead_OnARequestShorterThanItsMethodId_Throws(int bodyLength)
    {
        byte[] bytes = HandMadeFrame(FrameType.Request, new byte[bodyLength]);

        AssertRejected(bytes, $"A Request frame needs a method id (4 bytes); {bodyLength} bytes are left of its body.");
    }

    [Theory]
    [InlineData((byte)FrameType.Hello, 0)]
    [InlineData((byte)FrameType.Hello, 5)]
    [InlineData((byte)FrameType.HelloAck, 0)]
    [InlineData((byte)FrameType.HelloAck, 5)]
    public void TryRead_OnAHelloShorterThanMagicAndVersion_Throws(byte typeByte, int bodyLength)
    {
        var type = (FrameType)typeByte;
        byte[] bytes = HandMadeFrame(type, "MUX1\u0001"u8.ToArray()[..bodyLength]);

        AssertRejected(bytes, "needs magic and version (6 bytes)");
    }

    [Theory]
    [InlineData((byte)FrameType.Ping, 0)]
    [InlineData((byte)FrameType.Ping, 7)]
    [InlineData((byte)FrameType.Ping, 9)]
    [InlineData((byte)FrameType.Ping, 16)]
    [InlineData((byte)FrameType.Pong, 0)]
    [InlineData((byte)FrameType.Pong, 7)]
    [InlineData((byte)FrameType.Pong, 9)]
    public void TryRead_OnAPingOrPongWithoutExactlyEightBytes_Throws(byte typeByte, int bodyLength)
    {
        var type = (FrameType)typeByte;
        byte[] bytes = HandMadeFrame(type, new byte[bodyLength], callId: 0);

        AssertRejected(bytes, $"A {type} frame must carry exactly 8 bytes after its header; it carries {bodyLength}.");
    }

    [Theory]
    [InlineData(1)]
    [InlineData(8)]
    public void TryRead_OnACancelWithABody_Throws(int bodyLength)
    {
        byte[] bytes = HandMadeFrame(FrameType.Cancel, new byte[bodyLength]);

        AssertRejected(bytes, $"A Cancel frame must carry exactly 0 bytes after its header; it carries {bodyLength}.");
    }

    [Theory]
    [InlineData(0)]
    [InlineData(3)]
    [InlineData(5)]
    [InlineData(8)]
    public void TryRead_OnAGoAwayWithoutExactlyFourBytes_Throws(int bodyLength)
    {
        byte[] bytes = HandMadeFrame(FrameType.GoAway, new byte[bodyLength], callId: 0);

        AssertRejected(bytes, $"A GoAway frame must carry exactly 4 bytes after its header; it carries {bodyLength}.");
    }

    [Theory]
    [InlineData(0)]
    [InlineData(3)]
    [InlineData(5)]
    public void TryRead_OnAStreamCreditWithoutExactlyFourBytes_Throws(int bodyLength)
    {
        byte[] bytes = HandMadeFrame(FrameType.StreamCredit, new byte[bodyLength], callId: 5);

        AssertRejected(bytes, $"A StreamCredit frame must carry exactly 4 bytes after its header; it carries {bodyLength}.");
    }

    [Theory]
    [InlineData((byte)10)]
    [InlineData((byte)11)]
    [InlineData((byte)12)]
    public void TryRead_OnAStreamFrameOfCallZero_Throws(byte typeByte)
    {
        var type = (FrameType)typeByte;
        byte[] bytes = HandMadeFrame(type, type == FrameType.StreamCredit ? new byte[4] : [], callId: 0);

        AssertRejected(bytes, $"A {type} frame belongs to a call; it carries call id 0.");
    }

    [Theory]
    [InlineData((byte)FrameType.Response)]
    [InlineData((byte)FrameType.Error)]
    public void TryRead_OnAResponseOrErrorWithAnEmptyBody_ReturnsAnEmptyPayload(byte typeByte)
    {
        var type = (FrameType)typeByte;
        var buffer = new ReadOnlySequence<byte>(HandMadeFrame(type, [], callId: 5));

        Assert.True(FrameReader.TryRead(ref buffer, MaxFrameSize, out Frame frame));
        Assert.Equal(type, frame.Type);
        Assert.Equal(5u, frame.CallId);
        Assert.True(frame.Payload.IsEmpty);
    }

    [Fact]
    public void TryRead_OnRandomGarbage_ReturnsAFrameOrFalseOrThrowsMuxProtocolException_Only()
    {
        var random = new Random(20240611);
        int frames = 0, partials = 0, rejected = 0;
        var failures = new List<string>();
        for (int i = 0; i < 1000; i++)
        {
            byte[] bytes = RandomBuffer(random, i);
            int maxFrameSize = random.Next(3) == 0 ? int.MaxValue : 4096;
            ReadOnlySequence<byte> buffer = random.Next(2) == 0 ? new ReadOnlySequence<byte>(bytes) : RandomSegments(random, bytes);
            try
            {
                // Read as the connection's loop would: frame after frame until one is partial.
                while (true)
                {
                    ReadOnlySequence<byte> before = buffer;
                    if (!FrameReader.TryRead(ref buffer, maxFrameSize, out Frame frame))
                    {
                        Assert.Equal(before.Start, buffer.Start);
                        Assert.Equal(before.Length, buffer.Length);
                        partials++;
                        break;
                    }

                    frames++;
                    long consumed = before.Length - buffer.Length;
                    Assert.Equal(ProtocolConstants.LengthPrefixSize + (long)ReadLength(before), consumed);
                    Assert.True(Enum.IsDefined(frame.Type));
                    Assert.True(
                        frame.Flags == FrameFlags.None || (frame.Type == FrameType.Request && (frame.Flags & ~(FrameFlags.TraceContext | FrameFlags.Deadline)) == 0),
                        $"Flags {frame.Flags} accepted on a {frame.Type} frame.");
                    Assert.True(frame.Payload.Length <= consumed);
                }
            }
            catch (MuxProtocolException)
            {
                rejected++;
            }
            catch (Exception ex)
            {
                failures.Add($"buffer {i} ({Convert.ToHexString(bytes)}): {ex.GetType().FullName}: {ex.Message}");
            }
        }

        Assert.True(failures.Count == 0, string.Join(Environment.NewLine, failures));

        // The generator must exercise all three outcomes, or the test proves little.
        Assert.True(frames > 50, $"only {frames} frames parsed");
        Assert.True(partials > 50, $"only {partials} partial buffers");
        Assert.True(rejected > 50, $"only {rejected} buffers rejected");
    }

    private static uint ReadLength(ReadOnlySequence<byte> buffer)
    {
        Span<byte> prefix = stackalloc byte[4];
        buffer.Slice(0, 4).CopyTo(prefix);
        return BinaryPrimitives.ReadUInt32LittleEndian(prefix);
    }

    /// <summary>Pure noise for some buffers; for the rest, noise shaped like frames (plausible
    /// lengths, mostly known types, mostly zero flags) so that the checks past the header run too.</summary>
    private static byte[] RandomBuffer(Random random, int i)
    {
        if (i % 4 == 0)
        {
            byte[] noise = new byte[random.Next(0, 64)];
            random.NextBytes(noise);
            return noise;
        }

        var bytes = new List<byte>();
        int count = random.Next(1, 4);
        for (int f = 0; f < count; f++)
        {
            int bodyLength = random.Next(0, 20);
            byte[] frame = new byte[ProtocolConstants.FrameHeaderSize + bodyLength];
            random.NextBytes(frame);
            uint length = (uint)(ProtocolConstants.CommonHeaderSize + bodyLength);
            int lengthChoice = random.Next(10);
            length = lengthChoice switch
            {
                0 => (uint)random.Next(0, 6),
                1 => length + (uint)random.Next(1, 30),
                2 => (uint)random.Next(),
                _ => length,
            };
            BinaryPrimitives.WriteUInt32LittleEndian(frame, length);
            frame[4] = random.Next(10) == 0 ? (byte)random.Next(256) : (byte)random.Next(1, 10);
            frame[5] = random.Next(10) == 0 ? (byte)random.Next(256) : (byte)0;
            bytes.AddRange(frame);
        }

        // Sometimes cut the last frame short.
        int cut = random.Next(3) == 0 ? random.Next(0, Math.Min(bytes.Count, 12) + 1) : 0;
        return bytes.Take(bytes.Count - cut).ToArray();
    }

    private static ReadOnlySequence<byte> RandomSegments(Random random, byte[] bytes)
    {
        var chunks = new List<byte[]>();
        int position = 0;
        do
        {
            int size = random.Next(0, Math.Max(1, bytes.Length - position) + 1);
            chunks.Add(bytes[position..(position + Math.Min(size, bytes.Length - position))]);
            position += chunks[^1].Length;
        }
        while (position < bytes.Length);

        return TestSegment.Chain([.. chunks]);
    }

    // FrameWriter reserves the header, serializes the body, then patches the length (and a
    // Request's method id) in by offset; the staging buffer may grow (reallocate) meanwhile.
    [Theory]
    [InlineData(100)]
    [InlineData(300)]
    [InlineData(1000)]
    [InlineData(100_000)]
    public void FrameWriter_Write_IntoAFreshPooledBufferWriter_ProducesAFrameThatReadsBack(int argumentLength)
    {
        byte[] args = Enumerable.Range(0, argumentLength).Select(static i => (byte)(i + 1)).ToArray();
        using var output = new PooledBufferWriter();
        var body = new RawBody(args);
        int size = FrameWriter.Write(output, FrameType.Request, 78, 0xd4d62cf8, ref body);

        Assert.Equal(output.WrittenCount, size);
        var buffer = new ReadOnlySequence<byte>(output.WrittenMemory);
        Assert.True(FrameReader.TryRead(ref buffer, 1024 * 1024, out Frame frame));
        Assert.Equal(FrameType.Request, frame.Type);
        Assert.Equal(78u, frame.CallId);
        Assert.Equal(0xd4d62cf8u, frame.MethodId);
        Assert.Equal(args, frame.Payload.ToArray());
    }
}

/// <summary>A segment of a hand-built multi-segment <see cref="ReadOnlySequence{T}"/>.</summary>
internal sealed class TestSegment : ReadOnlySequenceSegment<byte>
{
    public TestSegment(ReadOnlyMemory<byte> memory) => Memory = memory;

    public TestSegment Append(ReadOnlyMemory<byte> memory)
    {
        var next = new TestSegment(memory) { RunningIndex = RunningIndex + Memory.Length };
        Next = next;
        return next;
    }

    /// <summary>One sequence whose segments are the given chunks in order (empty chunks included).</summary>
    public static ReadOnlySequence<byte> Chain(params byte[][] chunks)
    {
        var first = new TestSegment(chunks[0]);
        TestSegment last = first;
        for (int i = 1; i < chunks.Length; i++)
        {
            last = last.Append(chunks[i]);
        }

        return new ReadOnlySequence<byte>(first, 0, last, last.Memory.Length);
    }
}
