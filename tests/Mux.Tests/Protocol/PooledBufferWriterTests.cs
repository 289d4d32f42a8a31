using System.Buffers;
using MessagePack;
using Mux.Protocol;

namespace Mux.Tests.Protocol;

public class PooledBufferWriterTests
{
    [Fact]
    public void Writes_GrowTheBuffer_AndKeepEverythingWritten()
    {
        using var output = new PooledBufferWriter(4);
        var writer = new MessagePackWriter(output);
        for (int i = 0; i < 1000; i++)
        {
            writer.Write(i);
        }

        writer.Write(new string('z', 5000));
        writer.Flush();

        var reader = new MessagePackReader(output.WrittenMemory);
        for (int i = 0; i < 1000; i++)
        {
            Assert.Equal(i, reader.ReadInt32());
        }

        Assert.Equal(5000, reader.ReadString()!.Length);
        Assert.True(reader.End);
        Assert.Equal(output.WrittenSpan.ToArray(), output.WrittenMemory.ToArray());
        Assert.Equal(output.WrittenSpan.ToArray(), output.Buffer.AsSpan(0, output.WrittenCount).ToArray());
    }

    [Fact]
    public void GetSpan_ReturnsAtLeastTheSizeHint()
    {
        using var output = new PooledBufferWriter(16);
        Assert.True(output.GetSpan(100_000).Length >= 100_000);
        Assert.True(output.GetMemory().Length >= 1);
        Assert.True(output.GetSpan(0).Length >= 1);
    }

    [Fact]
    public void Reset_KeepsTheArray_AndForgetsTheBytes()
    {
        using var output = new PooledBufferWriter();
        output.GetSpan(3)[..3].Fill(7);
        output.Advance(3);
        byte[] buffer = output.Buffer;

        output.Reset();

        Assert.Equal(0, output.WrittenCount);
        Assert.True(output.WrittenSpan.IsEmpty);
        Assert.Same(buffer, output.Buffer);
    }

    [Fact]
    public void Advance_PastTheSpan_Throws()
    {
        using var output = new PooledBufferWriter(16);
        int available = output.GetSpan().Length;
        Assert.Throws<ArgumentOutOfRangeException>(() => output.Advance(available + 1));
        Assert.Throws<ArgumentOutOfRangeException>(() => output.Advance(-1));
    }

    [Fact]
    public void Constructor_RejectsANonPositiveCapacity()
    {
        Assert.Throws<ArgumentOutOfRangeException>(() => new PooledBufferWriter(0));
    }

    [Fact]
    public void AfterDispose_AWrite_RentsAnArrayAgain_WhichTheNextDisposeReturns()
    {
        var output = new PooledBufferWriter(16);
        output.Dispose();
        Assert.True(output.WrittenSpan.IsEmpty);

        output.GetSpan(3)[..3].Fill(9);
        output.Advance(3);

        Assert.Equal(new byte[] { 9, 9, 9 }, output.WrittenSpan.ToArray());
        output.Dispose();
        Assert.Equal(0, output.WrittenCount);
        Assert.Empty(output.Buffer);
    }

    [Fact]
    public void Dispose_Twice_ReturnsTheBufferToThePoolOnlyOnce()
    {
        // An odd size keeps other tests' arrays out of the way. An array returned twice would be
        // handed out twice by the next two rentals (a silent corruption); returned once, it cannot.
        const int size = 700_000;
        var output = new PooledBufferWriter(size);
        output.GetSpan(1)[0] = 1;
        output.Advance(1);

        output.Dispose();
        output.Dispose();

        byte[] first = ArrayPool<byte>.Shared.Rent(size);
        byte[] second = ArrayPool<byte>.Shared.Rent(size);
        try
        {
            Assert.NotSame(first, second);
            Assert.Equal(0, output.WrittenCount);
        }
        finally
        {
            ArrayPool<byte>.Shared.Return(first);
            ArrayPool<byte>.Shared.Return(second);
        }
    }
}
