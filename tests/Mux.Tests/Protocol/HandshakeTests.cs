using System.Buffers;
using System.Buffers.Binary;
using Mux.Protocol;
using MessagePack;
using static Mux.Tests.Protocol.ProtocolTestHelpers;

namespace Mux.Tests.Protocol;

public class HandshakeTests
{
    private delegate void WriteMap(ref MessagePackWriter writer);

    /// <summary>Magic, version, then whatever <paramref name="writeMap"/> writes.</summary>
    private static byte[] HandMadePayload(WriteMap writeMap, ushort version = ProtocolConstants.Version, uint magic = 0)
    {
        var output = new ArrayBufferWriter<byte>();
        Span<byte> prefix = output.GetSpan(ProtocolConstants.HelloHeaderSize);
        BinaryPrimitives.WriteUInt32LittleEndian(prefix, magic == 0 ? ProtocolConstants.Magic : magic);
        BinaryPrimitives.WriteUInt16LittleEndian(prefix[4..], version);
        output.Advance(ProtocolConstants.HelloHeaderSize);
        var writer = new MessagePackWriter(output);
        writeMap(ref writer);
        writer.Flush();
        return output.WrittenSpan.ToArray();
    }

    private static HandshakeSettings Parse(byte[] payload) => HandshakeSettings.Parse(new ReadOnlySequence<byte>(payload));

    public static TheoryData<ushort, int, int, string?> RoundTripCases => new()
    {
        { 1, 4096, 1, null },
        { 1, 4 * 1024 * 1024, 1000, "secret" },
        { 1, 256 * 1024 * 1024, int.MaxValue, string.Empty },
        { 2, 65536, 7, "tökén with ünïcode and spaces" },
        { ushort.MaxValue, int.MaxValue, 128, new string('t', 300) },
    };

    [Theory]
    [MemberData(nameof(RoundTripCases))]
    public void Settings_RoundTripThroughWriteAndParse(ushort version, int maxFrameSize, int maxConcurrentCalls, string? authToken)
    {
        var settings = new HandshakeSettings(version, maxFrameSize, maxConcurrentCalls, authToken);

        HandshakeSettings parsed = Parse(EncodeBody(settings));

        Assert.Equal(settings, parsed);
    }

    [Fact]
    public void Write_StartsWithTheMagicMux1AndTheLittleEndianVersion()
    {
        byte[] payload = EncodeBody(new HandshakeSettings(0x0201, 4096, 1, null));

        Assert.Equal("MUX1"u8.ToArray(), payload[..4]);
        Assert.Equal(new byte[] { 0x01, 0x02 }, payload[4..6]);
        Assert.Equal(0x87, payload[6]); // A map of 7 entries (with traceContext, streamWindow, maxMessageSize, cancelEndsFragments and serverCallStreams): no auth token key without a token.
        Assert.Equal(0x88, EncodeBody(new HandshakeSettings(1, 4096, 1, "x"))[6]);
    }

    [Theory]
    [InlineData(null)]
    [InlineData("")]
    [InlineData("secret")]
    public void Settings_RoundTripThroughAWholeHelloFrame(string? authToken)
    {
        AssertRoundTripThroughAHelloFrame(new HandshakeSettings(1, 65536, 1000, authToken));
    }

    // A long token makes the Hello larger than the writer's first buffer (see the FrameWriter
    // tests in FrameReaderTests): the handshake of a client with such a token must still work.
    [Theory]
    [InlineData(250)]
    [InlineData(300)]
    [InlineData(2000)]
    public void Settings_WithALongAuthToken_RoundTripThroughAWholeHelloFrame(int tokenLength)
    {
        AssertRoundTripThroughAHelloFrame(new HandshakeSettings(1, 65536, 1000, new string('t', tokenLength)));
    }

    private static void AssertRoundTripThroughAHelloFrame(HandshakeSettings settings)
    {
        var buffer = new ReadOnlySequence<byte>(WriteHelloFrame(FrameType.Hello, settings));

        Assert.True(FrameReader.TryRead(ref buffer, 4096, out Frame frame));

        Assert.Equal(FrameType.Hello, frame.Type);
        Assert.Equal(0u, frame.CallId);
        Assert.Equal(settings, HandshakeSettings.Parse(frame.Payload));
        Assert.True(buffer.IsEmpty);
    }

    [Theory]
    [InlineData("MUX2")]
    [InlineData("mux1")]
    [InlineData("HTTP")]
    [InlineData("\0\0\0\0")]
    public void Parse_WithTheWrongMagic_SaysThePeerIsNotAMuxEndpoint(string magic)
    {
        byte[] payload = EncodeBody(new HandshakeSettings(1, 4096, 1, null));
        System.Text.Encoding.ASCII.GetBytes(magic).CopyTo(payload, 0);

        var ex = Assert.Throws<MuxProtocolException>(() => Parse(payload));

        Assert.Contains("it is not a Mux endpoint", ex.Message, StringComparison.Ordinal);
        Assert.Contains("MUX1", ex.Message, StringComparison.Ordinal);
    }

    [Fact]
    public void Parse_SkipsUnknownKeysOfAnyShape()
    {
        byte[] payload = HandMadePayload((ref MessagePackWriter w) =>
        {
            w.WriteMapHeader(7);
            w.Write("compression");
            w.Write("zstd");
            w.Write("maxFrameSize");
            w.Write(8192);
            w.Write("nested");
            w.WriteMapHeader(2);
            w.Write("a");
            w.WriteArrayHeader(3);
            w.Write(1);
            w.Write("two");
            w.WriteNil();
            w.Write("b");
            w.Write(3.5);
            w.Write("authToken");
            w.Write("secret");
            w.Write("binary");
            w.Write(new byte[] { 1, 2, 3 });
            w.Write("maxConcurrentCalls");
            w.Write(50);
            w.Write("future");
            w.Write(long.MaxValue);
        });

        HandshakeSettings parsed = Parse(payload);

        Assert.Equal(new HandshakeSettings(ProtocolConstants.Version, 8192, 50, "secret") { CancelEndsFragments = false, ServerCallStreams = false }, parsed);
    }

    [Fact]
    public void Parse_OfAnEmptyMap_UsesTheDefaults()
    {
        byte[] payload = HandMadePayload((ref MessagePackWriter w) => w.WriteMapHeader(0));

        HandshakeSettings parsed = Parse(payload);

        // A peer that does not say takes a Cancel the way version 2 first did (the rest of a
        // fragmented Request still follows it), and takes no streams on its server's calls.
        Assert.Equal(new HandshakeSettings(ProtocolConstants.Version, ProtocolConstants.MinimumMaxFrameSize, int.MaxValue, null) { CancelEndsFragments = false, ServerCallStreams = false }, parsed);
    }

    [Theory]
    [InlineData(4095)]
    [InlineData(0)]
    [InlineData(-1)]
    [InlineData(int.MinValue)]
    public void Parse_WithAMaxFrameSizeBelowTheProtocolMinimum_Throws(int maxFrameSize)
    {
        byte[] payload = EncodeBody(new HandshakeSettings(1, maxFrameSize, 10, null));

        var ex = Assert.Throws<MuxProtocolException>(() => Parse(payload));

        Assert.Contains("out of range", ex.Message, StringComparison.Ordinal);
        Assert.Contains($"maxFrameSize {maxFrameSize} (at least 4096)", ex.Message, StringComparison.Ordinal);
    }

    [Theory]
    [InlineData(0)]
    [InlineData(-5)]
    public void Parse_WithMaxConcurrentCallsBelowOne_Throws(int maxConcurrentCalls)
    {
        byte[] payload = EncodeBody(new HandshakeSettings(1, 4096, maxConcurrentCalls, null));

        var ex = Assert.Throws<MuxProtocolException>(() => Parse(payload));

        Assert.Contains($"maxConcurrentCalls {maxConcurrentCalls} (at least 1)", ex.Message, StringComparison.Ordinal);
    }

    [Fact]
    public void Parse_WithAMaxFrameSizeThatIsNotAnInt32_ThrowsMuxProtocolException()
    {
        byte[] payload = HandMadePayload((ref MessagePackWriter w) =>
        {
            w.WriteMapHeader(1);
            w.Write("maxFrameSize");
            w.Write("big");
        });

        var ex = Assert.Throws<MuxProtocolException>(() => Parse(payload));

        Assert.Contains("not a valid MessagePack map", ex.Message, StringComparison.Ordinal);
        Assert.True(ex.InnerException is MessagePackSerializationException or EndOfStreamException, ex.InnerException?.GetType().Name);
    }

    [Fact]
    public void Parse_WithoutASettingsMap_ThrowsMuxProtocolException()
    {
        byte[] payload = HandMadePayload((ref MessagePackWriter w) => { });

        var ex = Assert.Throws<MuxProtocolException>(() => Parse(payload));

        Assert.Contains("not a valid MessagePack map", ex.Message, StringComparison.Ordinal);
    }

    [Fact]
    public void Parse_WithATruncatedSettingsMap_ThrowsMuxProtocolException_AtEveryCut()
    {
        byte[] payload = EncodeBody(new HandshakeSettings(1, 65536, 100, "secret"));
        for (int cut = ProtocolConstants.HelloHeaderSize; cut < payload.Length; cut++)
        {
            byte[] truncated = payload[..cut];
            var ex = Assert.Throws<MuxProtocolException>(() => Parse(truncated));
            Assert.Contains("not a valid MessagePack map", ex.Message, StringComparison.Ordinal);
        }
    }

    [Fact]
    public void Parse_WithAMapKeyThatIsNotAString_ThrowsMuxProtocolException()
    {
        byte[] payload = HandMadePayload((ref MessagePackWriter w) =>
        {
            w.WriteMapHeader(1);
            w.Write(1);
            w.Write(8192);
        });

        var ex = Assert.Throws<MuxProtocolException>(() => Parse(payload));

        Assert.Contains("not a valid MessagePack map", ex.Message, StringComparison.Ordinal);
    }
}
