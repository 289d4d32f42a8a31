using System.Runtime.CompilerServices;
using System.Runtime.InteropServices;
using System.Text;
using Mux.Serialization;
using static Mux.Tests.Serialization.MessagePackTestHelpers;

namespace Mux.Tests.Serialization;

public class StringAndBinaryTests
{
    [Theory]
    [InlineData(0, "a0")]
    [InlineData(1, "a1")]
    [InlineData(10, "aa")]
    [InlineData(11, "ab")]
    [InlineData(31, "bf")]
    [InlineData(32, "d920")]
    [InlineData(85, "d955")]
    [InlineData(86, "d956")]
    [InlineData(255, "d9ff")]
    [InlineData(256, "da0100")]
    [InlineData(21845, "da5555")]
    [InlineData(21846, "da5556")]
    [InlineData(65535, "daffff")]
    [InlineData(65536, "db00010000")]
    [InlineData(100000, "db000186a0")]
    public void AsciiString_UsesTheSmallestHeader_AndRoundTrips(int length, string expectedHeaderHex)
    {
        string value = new('x', length);
        byte[] header = Hex(expectedHeaderHex);
        byte[] bytes = Encode((ref MessagePackWriter w) => w.Write(value));

        Assert.Equal(header.Length + length, bytes.Length);
        Assert.Equal(header, bytes[..header.Length]);
        Assert.Equal(value, Deserialize<string>(bytes));
    }

    [Theory]
    [InlineData("héllo wörld")]
    [InlineData("€€€€€€€€€€")] // 10 chars, 30 bytes: fixstr
    [InlineData("€€€€€€€€€€€")] // 11 chars, 33 bytes: str8
    [InlineData("日本語のテキスト")]
    [InlineData("😀😀😀😀😀😀😀😀😀😀😀😀😀😀😀😀")] // surrogate pairs: 32 chars, 64 bytes
    [InlineData("mixed ascii and ünïcödé and 😀 emoji")]
    public void NonAsciiString_IsUtf8_WithAHeaderForItsByteLength(string value)
    {
        byte[] utf8 = Encoding.UTF8.GetBytes(value);
        byte[] bytes = Encode((ref MessagePackWriter w) => w.Write(value));

        byte[] expected = Encode((ref MessagePackWriter w) => w.WriteRaw(StrHeader(utf8.Length)));
        Assert.Equal([.. expected, .. utf8], bytes);
        Assert.Equal(value, Deserialize<string>(bytes));
    }

    [Theory]
    [InlineData('€', 100)] // 300 bytes: str16 although 100 chars would fit a str8 header
    [InlineData('€', 85)] // 255 bytes: still str8
    [InlineData('é', 16)] // 32 bytes: str8 although 16 chars would fit a fixstr
    [InlineData('€', 21846)] // 65538 bytes: str32
    public void MultiByteString_HeaderFollowsTheByteCountNotTheCharCount(char c, int count)
    {
        string value = new(c, count);
        int byteCount = Encoding.UTF8.GetByteCount(value);
        byte[] bytes = Encode((ref MessagePackWriter w) => w.Write(value));

        byte[] header = StrHeader(byteCount);
        Assert.Equal(header, bytes[..header.Length]);
        Assert.Equal(header.Length + byteCount, bytes.Length);
        Assert.Equal(value, Deserialize<string>(bytes));
    }

    [Fact]
    public void LoneSurrogate_IsWrittenAsTheReplacementCharacter_WithAConsistentHeader()
    {
        byte[] bytes = Encode((ref MessagePackWriter w) => w.Write("a\ud800b"));
        Assert.Equal(Hex("a5 61 efbfbd 62"), bytes);
        Assert.Equal("a\ufffdb", Deserialize<string>(bytes));
    }

    [Fact]
    public void NullString_IsWrittenAsNil_AndReadAsNull()
    {
        byte[] bytes = Encode((ref MessagePackWriter w) => w.Write((string?)null));
        Assert.Equal(Hex("c0"), bytes);
        Assert.Null(new MessagePackReader(bytes).ReadString());
        Assert.Null(RoundTrip<string?>(null));
    }

    [Fact]
    public void EmptyString_IsNotNull()
    {
        Assert.Equal(Hex("a0"), Serialize(string.Empty));
        Assert.Equal(string.Empty, RoundTrip(string.Empty));
    }

    [Fact]
    public void String_CanBeReadFromStr8Str16AndStr32_EvenWhenNotMinimal()
    {
        Assert.Equal("hi", new MessagePackReader(Hex("d902 6869")).ReadString());
        Assert.Equal("hi", new MessagePackReader(Hex("da0002 6869")).ReadString());
        Assert.Equal("hi", new MessagePackReader(Hex("db00000002 6869")).ReadString());
    }

    [Fact]
    public void ReadString_OfAnInteger_ThrowsWithExpectedAndActualType()
    {
        var ex = Assert.Throws<MuxSerializationException>(() => new MessagePackReader(Hex("05")).ReadString());
        Assert.Equal("Expected String but found Integer (0x05) at offset 0.", ex.Message);
    }

    [Theory]
    [InlineData(0, "c400")]
    [InlineData(1, "c401")]
    [InlineData(255, "c4ff")]
    [InlineData(256, "c50100")]
    [InlineData(65535, "c5ffff")]
    [InlineData(65536, "c600010000")]
    public void Binary_UsesTheSmallestHeader_AndRoundTrips(int length, string expectedHeaderHex)
    {
        byte[] value = new byte[length];
        new Random(length).NextBytes(value);
        byte[] header = Hex(expectedHeaderHex);
        byte[] bytes = Encode((ref MessagePackWriter w) => w.Write(value.AsSpan()));

        Assert.Equal([.. header, .. value], bytes);
        Assert.Equal(value, Deserialize<byte[]>(bytes));
        Assert.Equal(bytes, Encode((ref MessagePackWriter w) => w.WriteBinary(value)));
    }

    [Fact]
    public void NullBinary_IsWrittenAsNil_AndReadAsNull()
    {
        Assert.Equal(Hex("c0"), Encode((ref MessagePackWriter w) => w.WriteBinary(null)));
        Assert.Null(new MessagePackReader(Hex("c0")).ReadBinary());
        Assert.Null(RoundTrip<byte[]?>(null));
    }

    [Fact]
    public void ReadBytes_ReturnsASliceOfTheInput_WithoutCopying()
    {
        byte[] data = Hex("c403 010203");
        var reader = new MessagePackReader(data);
        ReadOnlySpan<byte> bytes = reader.ReadBytes();

        Assert.Equal(3, bytes.Length);
        Assert.True(Unsafe.AreSame(ref MemoryMarshal.GetReference(bytes), ref data[2]));
        Assert.True(reader.End);
    }

    [Fact]
    public void ReadBytes_AlsoAcceptsAString()
    {
        var reader = new MessagePackReader(Hex("a3 616263"));
        Assert.Equal("abc"u8.ToArray(), reader.ReadBytes().ToArray());
    }

    [Fact]
    public void ReadBytes_OfAMap_Throws()
    {
        var ex = Assert.Throws<MuxSerializationException>(() => new MessagePackReader(Hex("80")).ReadBytes().ToArray());
        Assert.Equal("Expected Binary but found Map (0x80) at offset 0.", ex.Message);
    }

    private static byte[] StrHeader(int byteCount) => byteCount switch
    {
        <= 31 => [(byte)(0xa0 | byteCount)],
        <= 255 => [0xd9, (byte)byteCount],
        <= 65535 => [0xda, (byte)(byteCount >> 8), (byte)byteCount],
        _ => [0xdb, (byte)(byteCount >> 24), (byte)(byteCount >> 16), (byte)(byteCount >> 8), (byte)byteCount],
    };
}
