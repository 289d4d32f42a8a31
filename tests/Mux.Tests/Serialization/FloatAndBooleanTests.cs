using Mux.Serialization;
using static Mux.Tests.Serialization.MessagePackTestHelpers;

namespace Mux.Tests.Serialization;

public class FloatAndBooleanTests
{
    [Theory]
    [InlineData(0f)]
    [InlineData(1.5f)]
    [InlineData(-1.5f)]
    [InlineData(float.NaN)]
    [InlineData(float.PositiveInfinity)]
    [InlineData(float.NegativeInfinity)]
    [InlineData(float.Epsilon)]
    [InlineData(float.MaxValue)]
    [InlineData(float.MinValue)]
    public void Single_RoundTrips_AsFloat32(float value)
    {
        byte[] bytes = Serialize(value);
        Assert.Equal(5, bytes.Length);
        Assert.Equal(0xca, bytes[0]);
        Assert.Equal(value, RoundTrip(value));
        Assert.Equal((double)value, new MessagePackReader(bytes).ReadDouble());
    }

    [Theory]
    [InlineData(0d)]
    [InlineData(1.5d)]
    [InlineData(-0.1d)]
    [InlineData(double.NaN)]
    [InlineData(double.PositiveInfinity)]
    [InlineData(double.NegativeInfinity)]
    [InlineData(double.Epsilon)]
    [InlineData(double.MaxValue)]
    [InlineData(double.MinValue)]
    public void Double_RoundTrips_AsFloat64(double value)
    {
        byte[] bytes = Serialize(value);
        Assert.Equal(9, bytes.Length);
        Assert.Equal(0xcb, bytes[0]);
        Assert.Equal(value, RoundTrip(value));
    }

    [Fact]
    public void Floats_AreBigEndianIeee754()
    {
        Assert.Equal(Hex("ca3fc00000"), Serialize(1.5f));
        Assert.Equal(Hex("cb3ff8000000000000"), Serialize(1.5d));
        Assert.Equal(Hex("ca7f800000"), Serialize(float.PositiveInfinity));
        Assert.Equal(Hex("cbfff0000000000000"), Serialize(double.NegativeInfinity));
    }

    [Fact]
    public void NegativeZero_KeepsItsSign()
    {
        Assert.True(double.IsNegative(RoundTrip(-0.0d)));
        Assert.True(float.IsNegative(RoundTrip(-0.0f)));
    }

    [Fact]
    public void FloatReads_AcceptIntegers()
    {
        Assert.Equal(-33f, new MessagePackReader(Hex("d0df")).ReadSingle());
        Assert.Equal(18446744073709551615d, new MessagePackReader(Hex("cfffffffffffffffff")).ReadDouble());
        Assert.Equal(long.MinValue, new MessagePackReader(Hex("d38000000000000000")).ReadDouble());
    }

    [Fact]
    public void ReadSingle_OfAFloat64_Throws()
    {
        var ex = Assert.Throws<MuxSerializationException>(() => new MessagePackReader(Hex("cb3ff8000000000000")).ReadSingle());
        Assert.Equal("Expected Float32 but found Float (0xcb) at offset 0.", ex.Message);
    }

    [Fact]
    public void ReadDouble_OfAString_Throws()
    {
        var ex = Assert.Throws<MuxSerializationException>(() => new MessagePackReader(Hex("a0")).ReadDouble());
        Assert.Equal("Expected Float but found String (0xa0) at offset 0.", ex.Message);
    }

    [Fact]
    public void Boolean_RoundTrips()
    {
        Assert.Equal(Hex("c3"), Serialize(true));
        Assert.Equal(Hex("c2"), Serialize(false));
        Assert.True(RoundTrip(true));
        Assert.False(RoundTrip(false));
    }

    [Fact]
    public void ReadBoolean_OfNil_Throws()
    {
        var ex = Assert.Throws<MuxSerializationException>(() => new MessagePackReader(Hex("c0")).ReadBoolean());
        Assert.Equal("Expected Boolean but found Nil (0xc0) at offset 0.", ex.Message);
    }
}
