using System.Buffers;
using System.Diagnostics;

namespace Mux.Protocol;

/// <summary>
/// One pooled array of a large message, linkable into a <see cref="ReadOnlySequence{T}"/>: a message
/// being encoded (<see cref="MessageBufferWriter"/>) or reassembled from fragments is a chain of
/// these instead of one contiguous array, so that no array of it is large enough for the large
/// object heap (see <see cref="BufferSegmentPool"/>). Owned by one message at a time; the pool
/// hands it out and takes it back whole (the array and this object).
/// </summary>
internal sealed class BufferSegment : ReadOnlySequenceSegment<byte>
{
    public BufferSegment(byte[] array)
    {
        Array = array;
    }

    /// <summary>The array; <see cref="BufferSegmentPool.SegmentSize"/> bytes, unless the segment
    /// is oversized (<see cref="IsOversized"/>).</summary>
    public byte[] Array { get; }

    /// <summary>Bytes of <see cref="Array"/> holding data, from its start.</summary>
    public int Used { get; set; }

    /// <summary>Room left in <see cref="Array"/>.</summary>
    public int Free => Array.Length - Used;

    /// <summary>A segment rented for one formatter that asked for more contiguous room than a
    /// pooled segment has (see <see cref="BufferSegmentPool.Rent"/>); its array goes back
    /// to the shared array pool.</summary>
    public bool IsOversized => Array.Length != BufferSegmentPool.SegmentSize;

    /// <summary>Whether the segment has gone back to its pool and not been rented since. Set and
    /// cleared by <see cref="BufferSegmentPool"/> only, which refuses a second return with it: two
    /// owners of one array would each write over the other's message.</summary>
    public bool IsReturned { get; set; }

    /// <summary>The next segment of the chain.</summary>
    public BufferSegment? NextSegment => (BufferSegment?)Next;

    /// <summary>Links <paramref name="next"/> after this segment, which is then complete.</summary>
    public void Link(BufferSegment next)
    {
        Debug.Assert(Next is null && next.Used == 0, "A segment is linked once, to an empty one.");
        Seal();
        next.RunningIndex = RunningIndex + Used;
        Next = next;
    }

    /// <summary>Makes a sequence over the chain see the bytes written so far.</summary>
    public void Seal() => Memory = Array.AsMemory(0, Used);

    /// <summary>Forgets the chain and the bytes, for the next message.</summary>
    public void Reset()
    {
        Used = 0;
        Memory = default;
        Next = null;
        RunningIndex = 0;
    }
}
