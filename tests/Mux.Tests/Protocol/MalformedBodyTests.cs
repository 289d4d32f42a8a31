using System.Buffers;
using System.Buffers.Binary;
using MessagePack;
using Mux.Protocol;

namespace Mux.Tests.Protocol;

/// <summary>
/// Bodies a hostile or broken peer may send, read by the parsers that run without a handler (the
/// handshake, a Request's metadata section): each is rejected as malformed, never with another
/// exception, a crash of the process or a hang.
/// </summary>
public class MalformedBodyTests
{
    /// <summary>Magic, version 1, then <paramref name="map"/>.</summary>
    private static ReadOnlySequence<byte> Hello(byte[] map)
    {
        byte[] payload = new byte[ProtocolConstants.HelloHeaderSize + map.Length];
        BinaryPrimitives.WriteUInt32LittleEndian(payload, ProtocolConstants.Magic);
        BinaryPrimitives.WriteUInt16LittleEndian(payload.AsSpan(4), ProtocolConstants.Version);
        map.CopyTo(payload.AsSpan(ProtocolConstants.HelloHeaderSize));
        return new ReadOnlySequence<byte>(payload);
    }

    /// <summary>A map of one entry, "future" (a key this build does not know, so it is skipped),
    /// whose value is <paramref name="depth"/> arrays, each holding the next.</summary>
    private static byte[] NestedUnknownValue(int depth)
    {
        var map = new List<byte> { 0x81, 0xa6 };
        map.AddRange("future"u8.ToArray());
        map.AddRange(Enumerable.Repeat((byte)0x91, depth)); // fixarray of 1 element
        map.Add(0xc0);
        return map.ToArray();
    }

    [Fact]
    public void Hello_WithADeeplyNestedUnknownValue_IsSkipped_WithoutRecursingPerLevel()
    {
        // A 64 KiB Hello holds 65,000 levels: enough to overflow the reader thread's stack if
        // skipping the value recursed once per level, which would end the whole process.
        HandshakeSettings settings = HandshakeSettings.Parse(Hello(NestedUnknownValue(65_000)));

        Assert.Equal(ProtocolConstants.Version, settings.Version);
    }

    public static TheoryData<string, byte[]> MalformedHelloMaps => new()
    {
        { "no map at all", [] },
        { "an array, not a map", [0x91, 0x01] },
        { "a map announcing 2^31-1 entries", [0xdf, 0x7f, 0xff, 0xff, 0xff] },
        { "a map announcing 2^32-1 entries", [0xdf, 0xff, 0xff, 0xff, 0xff] },
        { "a key of 2^32-1 bytes", [0x81, 0xdb, 0xff, 0xff, 0xff, 0xff, 0x61] },
        { "a key that is an integer", [0x81, 0x01, 0x01] },
        { "an unknown value of 2^31 bin bytes", [0x81, 0xa1, 0x78, 0xc6, 0x80, 0x00, 0x00, 0x00, 0x01] },
        { "an unknown value of 2^32-1 ext bytes", [0x81, 0xa1, 0x78, 0xc9, 0xff, 0xff, 0xff, 0xff, 0x01, 0x02] },
        { "maxFrameSize as a uint64 past int", [0x81, 0xac, .. "maxFrameSize"u8, 0xcf, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff] },
        { "maxFrameSize negative", [0x81, 0xac, .. "maxFrameSize"u8, 0xd2, 0x80, 0x00, 0x00, 0x00] },
        { "maxFrameSize as a float", [0x81, 0xac, .. "maxFrameSize"u8, 0xca, 0x47, 0x80, 0x00, 0x00] },
        { "traceContext as a string", [0x81, 0xac, .. "traceContext"u8, 0xa3, 0x79, 0x65, 0x73] },
        { "authToken as a map", [0x81, 0xa9, .. "authToken"u8, 0x80] },
        { "authToken cut short", [0x81, 0xa9, .. "authToken"u8, 0xa5, 0x61] },
        { "a value missing", [0x82, 0xa1, 0x78, 0x01, 0xa1, 0x79] },
    };

    [Theory]
    [MemberData(nameof(MalformedHelloMaps))]
    public void Hello_Malformed_IsAProtocolError(string what, byte[] map)
    {
        Assert.False(string.IsNullOrEmpty(what));
        Assert.Throws<MuxProtocolException>(() => HandshakeSettings.Parse(Hello(map)));
    }

    [Fact]
    public void Hello_WithInvalidUtf8InTheAuthToken_IsReadWithReplacementCharacters()
    {
        // Not malformed MessagePack: the token simply matches no server's, and the server refuses it.
        byte[] map = [0x81, 0xa9, .. "authToken"u8, 0xa2, 0xc3, 0x28];

        Assert.Equal("\uFFFD(", HandshakeSettings.Parse(Hello(map)).AuthToken);
    }

    /// <summary>A Request body that starts with a metadata section of <paramref name="map"/>,
    /// announcing <paramref name="size"/> bytes (the map's own size when null), then an argument.</summary>
    private static ReadOnlySequence<byte> Metadata(byte[] map, uint? size = null)
    {
        byte[] body = new byte[MetadataSection.LengthSize + map.Length + 1];
        BinaryPrimitives.WriteUInt32LittleEndian(body, size ?? (uint)map.Length);
        map.CopyTo(body.AsSpan(MetadataSection.LengthSize));
        body[^1] = 0x90;
        return new ReadOnlySequence<byte>(body);
    }

    public static TheoryData<string, byte[], uint?> MalformedSections => new()
    {
        { "a size past the body", [0x80], 100u },
        { "no map", [], null },
        { "a map announcing 2^32-1 entries", [0xdf, 0xff, 0xff, 0xff, 0xff], null },
        { "a key of 2^32-1 bytes", [0x81, 0xdb, 0xff, 0xff, 0xff, 0xff, 0x61], null },
        { "an integer key", [0x81, 0x01, 0xa1, 0x76], null },
        { "a nil value", [0x81, 0xa1, 0x6b, 0xc0], null },
        { "an array value", [0x81, 0xa1, 0x6b, 0x91, 0xa1, 0x76], null },
        { "a key of invalid UTF-8", [0x81, 0xa2, 0xc3, 0x28, 0xa1, 0x76], null },
        { "a key with a space", [0x81, 0xa3, 0x61, 0x20, 0x62, 0xa1, 0x76], null },
        { "the same key twice, in two cases", [0x82, 0xa1, 0x6b, 0xa1, 0x76, 0xa1, 0x4b, 0xa1, 0x77], null },
        { "a reserved key twice, in two cases", [0x82, 0xa5, .. "mux-a"u8, 0xa1, 0x31, 0xa5, .. "MUX-A"u8, 0xa1, 0x32], null },
        { "a reserved key with a control character and a space", [0x81, 0xac, .. "mux-\u0001bad key"u8, 0xa1, 0x76], null },
        { "a reserved key of invalid UTF-8", [0x81, 0xa6, .. "mux-"u8, 0xc3, 0x28, 0xa1, 0x76], null },
        { "bytes after the map", [0x80, 0x01], null },
        { "a map with fewer entries than it announces", [0x82, 0xa1, 0x6b, 0xa1, 0x76], null },
    };

    [Theory]
    [MemberData(nameof(MalformedSections))]
    public void MetadataSection_Malformed_IsMalformed(string what, byte[] map, uint? size)
    {
        MetadataSection.ReadStatus status = MetadataSection.Read(Metadata(map, size), MetadataSection.DefaultMaxSize, out _, out _, out _, out string? problem);

        Assert.Equal(MetadataSection.ReadStatus.Malformed, status);
        Assert.False(string.IsNullOrEmpty(problem), what);
    }

    [Fact]
    public void MetadataSection_ValidReservedKeys_AreDropped_AndTheOthersKept()
    {
        // Keys Mux does not know yet: a later version may send them, so they are skipped, not refused.
        byte[] map = [0x83, 0xaa, .. "mux-future"u8, 0xa1, 0x31, 0xa6, .. "Tenant"u8, 0xa4, .. "acme"u8, 0xa8, .. "MUX-Next"u8, 0xa0];

        MetadataSection.ReadStatus status = MetadataSection.Read(Metadata(map), MetadataSection.DefaultMaxSize, out Dictionary<string, string>? entries, out long consumed, out _, out string? problem);

        Assert.Equal(MetadataSection.ReadStatus.Ok, status);
        Assert.Null(problem);
        Assert.Equal(new Dictionary<string, string> { ["Tenant"] = "acme" }, entries);
        Assert.Equal(MetadataSection.LengthSize + map.Length, consumed);
    }

    [Theory]
    [InlineData(uint.MaxValue)]
    [InlineData(int.MaxValue + 1u)]
    [InlineData(MetadataSection.DefaultMaxSize + 1u)]
    public void MetadataSection_LargerThanTheLimit_IsTooLarge_BeforeAnythingIsRead(uint size)
    {
        MetadataSection.ReadStatus status = MetadataSection.Read(Metadata([0x80], size), MetadataSection.DefaultMaxSize, out _, out _, out long announced, out _);

        Assert.Equal(MetadataSection.ReadStatus.TooLarge, status);
        Assert.Equal(size, announced);
    }

    public static TheoryData<string, byte[]> TraceContextsPastTheBody => new()
    {
        { "less than the two lengths", [0x00, 0x00] },
        { "a traceparent of 255 bytes in a body of 10", [0xff, .. new byte[9]] },
        { "a tracestate of 65,535 bytes in a body of 10", [0x01, 0x61, 0xff, 0xff, .. new byte[6]] },
    };

    [Theory]
    [MemberData(nameof(TraceContextsPastTheBody))]
    public void TraceContext_WhoseLengthsRunPastTheBody_IsNotSplit(string what, byte[] body)
    {
        var sequence = new ReadOnlySequence<byte>(body);

        Assert.False(TraceContextHeader.TrySplit(ref sequence, out _), what);
        Assert.Equal(body.Length, sequence.Length);
    }

    [Theory]
    [InlineData("01-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-", "vendor=\u00ff\u0000")]
    [InlineData("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-x", "")]
    [InlineData("zz-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", "")]
    [InlineData("00-00000000000000000000000000000000-b7ad6b7169203331-01", "")]
    [InlineData("00-0af7651916cd43dd8448eb211c80319c", "")]
    public void TraceContext_Odd_IsReadOrIgnored_WithoutAnException(string traceParent, string traceState)
    {
        // W3C Trace Context: an invalid traceparent is ignored (the call starts a new trace).
        byte[] body = [(byte)traceParent.Length, .. System.Text.Encoding.Latin1.GetBytes(traceParent), (byte)traceState.Length, 0, .. System.Text.Encoding.Latin1.GetBytes(traceState), 0x90];
        var sequence = new ReadOnlySequence<byte>(body);
        Assert.True(TraceContextHeader.TrySplit(ref sequence, out ReadOnlySequence<byte> header));

        bool parsed = TraceContextHeader.TryParse(header, out System.Diagnostics.ActivityContext context);

        Assert.Equal(traceParent.StartsWith("01-", StringComparison.Ordinal), parsed);
        Assert.Equal(parsed, context != default);
        Assert.Equal(1, sequence.Length);
    }
}
