using System.Buffers;
using System.Diagnostics;

namespace Mux.Protocol;

/// <summary>
/// One pooled array of a large message, linkable into a <see cref="ReadOnlySequence{T}"/>: a message being encoded or
/// reassembled is a chain of these, so no array of it reaches the large object heap (see <see cref="BufferSegmentPool"/>).
/// Owned by one message at a time; the pool takes back the array and this object together.
/// </summary>
internal sealed class BufferSegment : ReadOnlySequenceSegment<byte>
{
    public BufferSegment(byte[] array)
    {
        Array = array;
    }

    /// <summary><see cref="BufferSegmentPool.SegmentSize"/> bytes, unless the segment <see cref="IsOversized"/>.</summary>
    public byte[] Array { get; }

    /// <summary>Bytes of <see cref="Array"/> holding data, from its start.</summary>
    public int Used { get; set; }

    public int Free => Array.Length - Used;

    /// <summary>Rented for a formatter that asked for more contiguous room than a pooled segment has; its array goes
    /// back to ArrayPool.Shared, and this object with its message.</summary>
    public bool IsOversized => Array.Length != BufferSegmentPool.SegmentSize;

    /// <summary>Back in its pool and not rented since. Only <see cref="BufferSegmentPool"/> sets it, to refuse a second
    /// return: two owners of one array would each write over the other's message.</summary>
    public bool IsReturned { get; set; }

    public BufferSegment? NextSegment => (BufferSegment?)Next;

    /// <summary>Links <paramref name="next"/> after this segment, which is then sealed and never written again.</summary>
    public void Link(BufferSegment next)
    {
        Debug.Assert(Next is null && next.Used == 0, "A segment is linked once, to an empty one.");
        Seal();
        next.RunningIndex = RunningIndex + Used;
        Next = next;
    }

    /// <summary>Makes a sequence over the chain see the bytes written so far.</summary>
    public void Seal() => Memory = Array.AsMemory(0, Used);

    public void Reset()
    {
        Used = 0;
        Memory = default;
        Next = null;
        RunningIndex = 0;
    }
}
