using System.Buffers;
using System.Diagnostics;

namespace Mux.Protocol;

/// <summary>
/// One piece of a large message, so no array of it reaches the large object heap. Most are pooled arrays; a chain may
/// also hold a binary's own memory (<see cref="IsExternal"/>) or its own exact-size array (<see cref="IsLanded"/>).
/// Owned by one message at a time.
/// </summary>
internal sealed class BufferSegment : ReadOnlySequenceSegment<byte>
{
    public BufferSegment(byte[] array)
    {
        Array = array;
    }

    private BufferSegment(ReadOnlyMemory<byte> external)
    {
        Array = [];
        Used = external.Length;
        Memory = external;
        IsExternal = true;
    }

    private BufferSegment(byte[] array, bool landed)
    {
        Array = array;
        IsLanded = landed;
    }

    /// <summary><see cref="BufferSegmentPool.SegmentSize"/> bytes unless oversized or landed; empty when external.</summary>
    public byte[] Array { get; }

    /// <summary>Bytes of <see cref="Array"/> holding data; an external segment's length.</summary>
    public int Used { get; set; }

    public int Free => IsExternal ? 0 : Array.Length - Used;

    /// <summary>Rented from ArrayPool.Shared for a formatter that asked for more contiguous room than a segment has.</summary>
    public bool IsOversized => !IsExternal && !IsLanded && Array.Length != BufferSegmentPool.SegmentSize;

    /// <summary>Memory of the sender's caller, read in place by the writer: nothing to return.</summary>
    public bool IsExternal { get; }

    /// <summary>A received binary's own exact-size array, handed to the user (<see cref="TryTakeLanded"/>): never pooled.</summary>
    public bool IsLanded { get; }

    // Set once the landed array has been handed out: a second read of the same bytes gets a copy, never the same array.
    private int _taken;

    /// <summary>Set by <see cref="BufferSegmentPool"/> to refuse a second return: two owners of one array would each
    /// write over the other's message.</summary>

    public bool IsReturned { get; set; }

    public BufferSegment? NextSegment => (BufferSegment?)Next;

    /// <summary>A segment over <paramref name="bytes"/>, which must stay unchanged until the chain is returned.</summary>
    public static BufferSegment External(ReadOnlyMemory<byte> bytes) => new(bytes);

    /// <summary>An empty segment over a new array of exactly <paramref name="length"/> bytes, for one received binary.</summary>
    public static BufferSegment Landed(int length) => new(GC.AllocateUninitializedArray<byte>(length), landed: true);

    /// <summary>The landed array, once: true when this segment is a landed one, full, and not taken before.</summary>
    public bool TryTakeLanded(out byte[] array)
    {
        array = Array;
        return IsLanded && Used == Array.Length && Interlocked.Exchange(ref _taken, 1) == 0;
    }

    /// <summary>Links <paramref name="next"/> after this segment, which is then sealed and never written again.</summary>
    public void Link(BufferSegment next)
    {
        Debug.Assert(Next is null && (next.Used == 0 || next.IsExternal), "A segment is linked once, to an empty or external one.");
        Seal();
        next.RunningIndex = RunningIndex + Used;
        Next = next;
    }

    /// <summary>Makes a sequence over the chain see the bytes written so far.</summary>
    public void Seal()
    {
        if (!IsExternal)
        {
            Memory = Array.AsMemory(0, Used);
        }
    }

    public void Reset()
    {
        Debug.Assert(!IsExternal && !IsLanded, "Only pooled segments are reused.");
        Used = 0;
        Memory = default;
        Next = null;
        RunningIndex = 0;
    }
}
