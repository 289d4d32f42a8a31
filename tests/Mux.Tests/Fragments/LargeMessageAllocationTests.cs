using System.Buffers;
using System.Runtime.InteropServices;
using MessagePack;
using Mux.Connection;
using Mux.Protocol;
using Mux.Serialization;

namespace Mux.Tests.Fragments;

/// <summary>
/// A 16 MiB message costs Mux no array of 85,000 bytes or more (the large object heap, which only a
/// full collection reclaims), on either side, but the one the user gets: encoded on the sender's
/// thread into pooled segments (the user's array spliced in between) and written out fragment by
/// fragment, then read fragment by fragment into pooled segments (the bin's bytes into the array
/// returned) and deserialized straight from them. Everything runs on the test's thread, one fragment at a time,
/// through the code the connection runs (FrameWriter, MessageBufferWriter, OutboundMessage,
/// FrameReader, MessageReassembly, Mux's serializer options), so the thread's allocation counter
/// sees all of it and nothing else. The segments come from a pool of the test's own, filled
/// beforehand, so that tests running meanwhile cannot empty it.
/// </summary>
public sealed class LargeMessageAllocationTests
{
    private const int LargeObjectThreshold = 85_000;
    private const int MiB = 1024 * 1024;

    // A frame is at most a fragment and its headers; the fragment size is the connections' default.
    private const int FragmentSize = 64 * 1024;

    private static readonly MessagePackSerializerOptions s_options = MuxSerializerOptions.ForClient(MessagePackSerializerOptions.Standard);

    [Fact]
    public void A16MiBMessage_IsEncodedFragmentedReassembledAndDeserialized_WithoutAnyArrayOnTheLargeObjectHeap()
    {
        var pool = new BufferSegmentPool(1024);
        Fill(pool, 600); // Two 16 MiB messages' worth: the measured round allocates no segment.
        var staging = new PooledBufferWriter();
        var writer = new MessageBufferWriter(pool);
        var wire = new ArrayBufferWriter<byte>(2 * FragmentSize);

        // Once with 1 MiB first: code paths and MessagePack's caches warm up, while any array pooled
        // for a 16 MiB message (a contiguous buffer, in ArrayPool.Shared) would not be warm yet.
        RoundTrip(BlobService.Pattern(MiB), pool, staging, writer, wire);
        byte[] data = BlobService.Pattern(16 * MiB);
        Result result = RoundTrip(data, pool, staging, writer, wire);

        Assert.Equal(data, result.Value);
        Assert.Equal(256 + 1, result.Fragments); // 16 MiB and a few header bytes, in 64 KiB fragments.
        Assert.True(result.EncodedInSegmentsOnly, "The sender's message was not entirely in pooled 64 KiB segments.");
        Assert.True(staging.Buffer.Length <= BufferSegmentPool.SegmentSize, $"The staging buffer grew to {staging.Buffer.Length} bytes.");
        Assert.True(result.ReassembledInSegmentsOnly, "The received message was not entirely in pooled 64 KiB segments.");
        Assert.True(result.EncodeBytes < LargeObjectThreshold, $"Encoding and writing the fragments allocated {result.EncodeBytes} bytes.");
        // Reading allocates what the user asked for, a new byte[] of the data (the one the bin landed in), and
        // of Mux's own less than one large object.
        long userArray = data.Length + (3 * IntPtr.Size);
        Assert.True(result.DecodeBytes - userArray < LargeObjectThreshold, $"Reading the fragments and deserializing allocated {result.DecodeBytes} bytes, {result.DecodeBytes - userArray} besides the {userArray}-byte array returned.");
        Assert.Equal(600, pool.FreeCount); // Every segment went back.
        Assert.Equal(600, pool.Created);
    }

    private static Result RoundTrip(byte[] data, BufferSegmentPool pool, PooledBufferWriter staging, MessageBufferWriter writer, ArrayBufferWriter<byte> wire)
    {
        long start = GC.GetAllocatedBytesForCurrentThread();
        writer.Start(staging);
        var body = new MessagePackBody<byte[]>(data, s_options);
        long length = FrameWriter.Write(writer, FrameType.Response, 7, 0, ref body);
        bool inSegments = writer.IsInSegments;
        BufferSegment first = writer.Detach();
        for (BufferSegment? segment = first; segment is not null; segment = segment.NextSegment)
        {
            inSegments &= !segment.IsOversized;
        }

        var message = new OutboundMessage(first, length, FragmentSize, pool);
        long encodeBytes = GC.GetAllocatedBytesForCurrentThread() - start;
        long decodeBytes = 0;
        MessageReassembly? reassembly = null;
        int fragments = 0;
        bool last;
        do
        {
            // The sender writes a fragment; the receiver reads it off the same bytes.
            wire.ResetWrittenCount();
            start = GC.GetAllocatedBytesForCurrentThread();
            last = message.WriteNextFragment(wire);
            long written = GC.GetAllocatedBytesForCurrentThread();
            encodeBytes += written - start;
            var buffer = new ReadOnlySequence<byte>(wire.WrittenMemory);
            Assert.True(FrameReader.TryRead(ref buffer, FragmentSize + 64, out Frame frame));
            if (reassembly is null)
            {
                reassembly = new MessageReassembly(frame, skip: false, owner: null, pool);
            }
            else
            {
                reassembly.Append(frame.Payload);
            }

            decodeBytes += GC.GetAllocatedBytesForCurrentThread() - written;
            fragments++;
        }
        while (!last);

        start = GC.GetAllocatedBytesForCurrentThread();
        message.Dispose();
        encodeBytes += GC.GetAllocatedBytesForCurrentThread() - start;

        start = GC.GetAllocatedBytesForCurrentThread();
        ReadOnlySequence<byte> payload = reassembly!.Payload;
        byte[]? value = MessagePackSerializer.Deserialize<byte[]>(payload, s_options);
        decodeBytes += GC.GetAllocatedBytesForCurrentThread() - start;
        // Pooled segments, and the one array the bin landed in, which is the value returned.
        bool reassembledInSegments = true;
        foreach (ReadOnlyMemory<byte> segment in payload)
        {
            reassembledInSegments &= segment.Length <= BufferSegmentPool.SegmentSize
                || (MemoryMarshal.TryGetArray(segment, out ArraySegment<byte> array) && ReferenceEquals(array.Array, value));
        }

        start = GC.GetAllocatedBytesForCurrentThread();
        reassembly.Release();
        decodeBytes += GC.GetAllocatedBytesForCurrentThread() - start;
        return new Result(value, fragments, inSegments, reassembledInSegments, encodeBytes, decodeBytes);
    }

    private static void Fill(BufferSegmentPool pool, int count)
    {
        var rented = new BufferSegment[count];
        for (int i = 0; i < count; i++)
        {
            rented[i] = pool.Rent();
        }

        foreach (BufferSegment segment in rented)
        {
            pool.Return(segment);
        }
    }

    private sealed record Result(byte[]? Value, int Fragments, bool EncodedInSegmentsOnly, bool ReassembledInSegmentsOnly, long EncodeBytes, long DecodeBytes);
}
