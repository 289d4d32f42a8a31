using System.Buffers;
using Mux.Protocol;

namespace Mux.Tests.Protocol;

/// <summary>How a frame that may be a large message is encoded: in the staging buffer up to one
/// segment, then in pooled segments; and how those segments come back.</summary>
public sealed class MessageBufferWriterTests
{
    [Fact]
    public void AFrameThatFitsOneSegment_StaysInTheStagingBuffer()
    {
        var pool = new BufferSegmentPool(8);
        var staging = new PooledBufferWriter();
        var writer = new MessageBufferWriter(pool);
        writer.Start(staging);

        Write(writer, BufferSegmentPool.SegmentSize, piece: 1000);

        Assert.False(writer.IsInSegments);
        Assert.Equal(BufferSegmentPool.SegmentSize, staging.WrittenCount);
        Assert.Equal(0, pool.Created);
        writer.End();
    }

    [Fact]
    public void OneByteMoreThanASegment_MovesTheFrameIntoSegments_ByteForByte_AndEmptiesTheStagingBuffer()
    {
        var pool = new BufferSegmentPool(8);
        var staging = new PooledBufferWriter();
        var writer = new MessageBufferWriter(pool);
        writer.Start(staging);

        byte[] written = Write(writer, BufferSegmentPool.SegmentSize + 1, piece: 1000);
        Span<byte> header = writer.FirstBytes(4);
        header[0] = 0xAB; // Patched after the body, as FrameWriter patches the length prefix.
        written[0] = 0xAB;

        Assert.True(writer.IsInSegments);
        Assert.Equal(BufferSegmentPool.SegmentSize + 1, writer.WrittenCount);
        Assert.Equal(0, staging.WrittenCount);
        BufferSegment first = writer.Detach();
        Assert.Equal(written, Sequence(first).ToArray());
        Assert.Equal(2, pool.Created);
        pool.ReturnChain(first);
        Assert.Equal(2, pool.FreeCount);
    }

    [Fact]
    public void AFrameMovedIntoSegments_CanBePutBackIntoTheStagingBufferWhole_ReturningItsSegments()
    {
        var pool = new BufferSegmentPool(8);
        var staging = new PooledBufferWriter();
        var writer = new MessageBufferWriter(pool);
        writer.Start(staging);
        byte[] written = Write(writer, 200_000, piece: 7777);

        writer.End();

        Assert.Equal(written, staging.WrittenSpan.ToArray());
        Assert.Equal(pool.Created, pool.FreeCount);
        Assert.Equal(4, pool.Created); // 200,000 bytes in 7,777-byte pieces: eight to a segment.
    }

    [Fact]
    public void ARequestForMoreContiguousRoomThanASegment_GetsOneOversizedSegment_WhichGoesBackToTheArrayPool()
    {
        var pool = new BufferSegmentPool(8);
        var writer = new MessageBufferWriter(pool);
        writer.Start(new PooledBufferWriter());
        Write(writer, 100, piece: 100);

        Span<byte> span = writer.GetSpan(300_000);
        span[..300_000].Fill(7);
        writer.Advance(300_000);
        Assert.Equal(300_100, writer.WrittenCount); // A pooled segment holding 100 bytes, then the oversized one.
        BufferSegment first = writer.Detach();

        BufferSegment oversized = first.NextSegment!;
        Assert.True(oversized.IsOversized);
        Assert.Equal(300_000, oversized.Used);
        Assert.Equal(300_100, Sequence(first).Length);
        pool.ReturnChain(first);
        Assert.Equal(1, pool.FreeCount); // The pooled segment; the oversized one's array went to ArrayPool.Shared.
    }

    [Fact]
    public void DiscardingAFrame_ReturnsItsSegments()
    {
        var pool = new BufferSegmentPool(8);
        var writer = new MessageBufferWriter(pool);
        writer.Start(new PooledBufferWriter());
        Write(writer, 3 * BufferSegmentPool.SegmentSize, piece: 4096);

        writer.Discard();

        Assert.Equal(3, pool.Created);
        Assert.Equal(3, pool.FreeCount);
        Assert.False(writer.IsInSegments);
    }

    [Fact]
    public void ThePool_KeepsAtMostItsCapacity_AndReusesWhatItKept()
    {
        var pool = new BufferSegmentPool(2);
        BufferSegment a = pool.Rent(), b = pool.Rent(), c = pool.Rent();
        a.Used = 10;

        pool.Return(a);
        pool.Return(b);
        pool.Return(c); // Over capacity: dropped.

        Assert.Equal(2, pool.FreeCount);
        BufferSegment again = pool.Rent();
        Assert.Same(b, again);
        Assert.Same(a, pool.Rent());
        Assert.Equal(0, a.Used); // Reset on return.
        Assert.Equal(3, pool.Created);
    }

    [Fact]
    public void Trim_DropsTheSegmentsNoOneRentedSinceThePreviousTrim()
    {
        var pool = new BufferSegmentPool(16);
        BufferSegment[] rented = [.. Enumerable.Range(0, 6).Select(_ => pool.Rent())];
        foreach (BufferSegment segment in rented)
        {
            pool.Return(segment);
        }

        pool.Trim(); // Sets the mark: 6 free, none idle since a previous trim.
        Assert.Equal(6, pool.FreeCount);
        BufferSegment one = pool.Rent();
        BufferSegment two = pool.Rent(); // 4 stayed free throughout.
        pool.Return(one);
        pool.Return(two);

        pool.Trim();

        Assert.Equal(2, pool.FreeCount);
        pool.Trim(); // The two were not rented since: dropped too.
        Assert.Equal(0, pool.FreeCount);
    }

    private static byte[] Write(MessageBufferWriter writer, int count, int piece)
    {
        byte[] bytes = Fragments.BlobService.Pattern(count);
        for (int offset = 0; offset < count; offset += piece)
        {
            int length = Math.Min(piece, count - offset);
            Span<byte> span = writer.GetSpan(length);
            bytes.AsSpan(offset, length).CopyTo(span);
            writer.Advance(length);
        }

        return bytes;
    }

    private static ReadOnlySequence<byte> Sequence(BufferSegment first)
    {
        BufferSegment last = first;
        while (last.NextSegment is { } next)
        {
            last = next;
        }

        return new ReadOnlySequence<byte>(first, 0, last, last.Used);
    }
}
