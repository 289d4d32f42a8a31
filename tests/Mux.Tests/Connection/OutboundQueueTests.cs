using System.Buffers;
using System.Buffers.Binary;
using Mux.Connection;
using Mux.Protocol;
using Mux.Tests.Infrastructure;

namespace Mux.Tests.Connection;

/// <summary>The outbound queue's stripes (issue 24): many senders queue at once, each call's frames
/// go to one stripe, and the writer, taking the stripes one after the other while they fill, still
/// writes every frame once and each call's frames in the order they were queued.</summary>
public class OutboundQueueTests
{
    private const int RecordSize = 8; // call id, then the frame's number within its call

    [Fact]
    public async Task FramesQueuedByManySendersWhileTheWriterTakesThem_AllGoOut_EachCallsInOrder()
    {
        const int Senders = 8;
        const int CallsPerSender = 16;
        const int FramesPerCall = 2_000;
        var queue = new OutboundQueue();
        var output = new ArrayBufferWriter<byte>();
        int sendersLeft = Senders;

        // The writer role: takes whatever is queued, over and over, while the senders queue.
        Task writer = Task.Run(() =>
        {
            while (Volatile.Read(ref sendersLeft) > 0)
            {
                queue.WriteFrames(output, drop: false);
            }

            queue.WriteFrames(output, drop: false);
        });

        // Each sender queues its calls' frames interleaved, as callers on one thread would; the
        // call ids of all senders share the stripes (consecutive ids, as the id blocks hand out).
        Task[] senders = [.. Enumerable.Range(0, Senders).Select(sender => Task.Run(() =>
        {
            using var staging = new PooledBufferWriter(64);
            for (int frame = 0; frame < FramesPerCall; frame++)
            {
                for (int call = 0; call < CallsPerSender; call++)
                {
                    uint callId = (uint)(sender * CallsPerSender + call + 1);
                    staging.Reset();
                    Span<byte> record = staging.GetSpan(RecordSize);
                    BinaryPrimitives.WriteUInt32LittleEndian(record, callId);
                    BinaryPrimitives.WriteInt32LittleEndian(record[4..], frame);
                    staging.Advance(RecordSize);
                    Assert.False(queue.Enqueue(staging, callId)); // Small: copied, not taken over.
                }
            }

            Interlocked.Decrement(ref sendersLeft);
        }))];

        await Task.WhenAll(senders).WaitAsync(TestHost.Patience);
        await writer.WaitAsync(TestHost.Patience);

        Assert.Equal(0, queue.QueuedFrames);
        Assert.Equal(0, queue.QueuedBytes);
        Assert.Equal(Senders * CallsPerSender * FramesPerCall * RecordSize, output.WrittenCount);
        var next = new Dictionary<uint, int>();
        for (ReadOnlySpan<byte> written = output.WrittenSpan; !written.IsEmpty; written = written[RecordSize..])
        {
            uint callId = BinaryPrimitives.ReadUInt32LittleEndian(written);
            int frame = BinaryPrimitives.ReadInt32LittleEndian(written[4..]);
            int expected = next.GetValueOrDefault(callId);
            Assert.True(frame == expected, $"Call {callId}: frame {frame} where {expected} was next.");
            next[callId] = frame + 1;
        }

        Assert.Equal(Senders * CallsPerSender, next.Count);
        Assert.All(next.Values, count => Assert.Equal(FramesPerCall, count));
    }

    [Fact]
    public void TheLimit_CountsEveryStripe_AndTheWriterTakingThemMakesRoom()
    {
        const int Limit = 4096;
        var queue = new OutboundQueue { Limit = Limit };
        var output = new ArrayBufferWriter<byte>();
        using var staging = new PooledBufferWriter(64);
        int queued = 0;
        uint callId = 1;

        // 100-byte frames of consecutive calls, spread over every stripe, until just under the limit.
        while (queued + 100 < Limit)
        {
            Enqueue(callId++);
            Assert.False(queue.IsFull);
        }

        Enqueue(callId++);
        Assert.Equal(queued, queue.QueuedBytes);
        Assert.True(queue.IsFull);

        queue.WriteFrames(output, drop: false);
        Assert.False(queue.IsFull);
        Assert.Equal(queued, output.WrittenCount);

        // Frames of a single call (one stripe) fill it as well.
        queued = 0;
        while (queued < Limit)
        {
            Assert.False(queue.IsFull);
            Enqueue(7);
        }

        Assert.True(queue.IsFull);

        void Enqueue(uint id)
        {
            staging.Reset();
            staging.GetSpan(100)[..100].Fill((byte)id);
            staging.Advance(100);
            Assert.False(queue.Enqueue(staging, id));
            queued += 100;
        }
    }
}
