using Mux.Protocol;

namespace Mux.Tests.Protocol;

/// <summary>The segment pool counts what is out, and refuses a segment returned twice rather than
/// handing it to two messages at once.</summary>
public sealed class BufferSegmentPoolTests
{
    [Theory]
    [InlineData(BufferSegmentPool.SegmentSize)]
    [InlineData(BufferSegmentPool.SegmentSize + 1)] // Oversized: its array goes back to ArrayPool.Shared.
    public void ASegmentReturnedTwice_IsRefused_AndCountedOnce(int size)
    {
        var pool = new BufferSegmentPool(8);
        BufferSegment segment = pool.Rent(size);
        pool.Return(segment);

        var ex = Assert.Throws<InvalidOperationException>(() => pool.Return(segment));

        Assert.Contains("returned twice", ex.Message, StringComparison.Ordinal);
        Assert.Equal(0, pool.Outstanding);
        Assert.Equal(size == BufferSegmentPool.SegmentSize ? 1 : 0, pool.FreeCount);
    }

    [Fact]
    public void ASegmentRentedAgain_AfterItsReturn_CanBeReturnedAgain()
    {
        var pool = new BufferSegmentPool(8);
        BufferSegment segment = pool.Rent();
        pool.Return(segment);

        BufferSegment again = pool.Rent();
        pool.Return(again);

        Assert.Same(segment, again);
        Assert.Equal(0, pool.Outstanding);
        Assert.Equal(1, pool.FreeCount);
    }

    [Fact]
    public void AChainReturnedTwice_IsRefusedAtItsFirstSegment()
    {
        var pool = new BufferSegmentPool(8);
        var writer = new MessageBufferWriter(pool);
        writer.Start(new PooledBufferWriter());
        writer.GetSpan(BufferSegmentPool.SegmentSize);
        writer.Advance(BufferSegmentPool.SegmentSize);
        writer.GetSpan(100);
        writer.Advance(100);
        BufferSegment first = writer.Detach();
        Assert.Equal(2, pool.Outstanding);
        pool.ReturnChain(first);

        // ReturnChain unlinked the segments as it returned them; the first is refused again.
        Assert.Throws<InvalidOperationException>(() => pool.ReturnChain(first));
        Assert.Equal(0, pool.Outstanding);
    }
}
