using System.Buffers;
using Mux.Connection;
using Mux.Protocol;

namespace Mux.Tests.Fragments;

public class FragmentFrameReaderTests
{
    private static Frame ReadOne(byte[] bytes)
    {
        var buffer = new ReadOnlySequence<byte>(bytes);
        Assert.True(FrameReader.TryRead(ref buffer, 64 * 1024, out Frame frame));
        Assert.True(buffer.IsEmpty);
        return frame;
    }

    private static void AssertRejected(byte[] bytes, string expected)
    {
        var buffer = new ReadOnlySequence<byte>(bytes);
        var ex = Assert.Throws<MuxProtocolException>(() => FrameReader.TryRead(ref buffer, 64 * 1024, out _));
        Assert.Contains(expected, ex.Message, StringComparison.Ordinal);
    }

    [Fact]
    public void AFirstRequestFragment_CarriesTheMessageSizeBeforeTheMethodId_AndThePayloadSizeIsWhatFollowsTheMethodId()
    {
        byte[] message = FragmentWire.RequestMessage("Echo", FragmentWire.BytesArgument(new byte[3000]));
        byte[] first = FragmentWire.First(FrameType.Request, 7, (uint)message.Length, message[..1024]);

        Frame frame = ReadOne(first);

        Assert.Equal(FrameType.Request, frame.Type);
        Assert.True(frame.IsFirstFragment);
        Assert.Equal(7u, frame.CallId);
        Assert.Equal(MuxMethodId.Compute("Mux.Tests.Fragments.IBlobService.Echo"), frame.MethodId);
        Assert.Equal((uint)message.Length, frame.MessageSize);
        Assert.Equal(message.Length - 4, frame.PayloadSize);
        Assert.Equal(message[4..1024], frame.Payload.ToArray());
    }

    [Fact]
    public void OutboundMessage_SplitsAFrameIntoAFirstFragmentAndContinuations_ThatReadBackAsTheSameBytes()
    {
        byte[] arguments = FragmentWire.BytesArgument(Enumerable.Range(0, 2500).Select(static i => (byte)i).ToArray());
        var pool = new BufferSegmentPool(8);
        var staged = new MessageBufferWriter(pool);
        staged.Start(new PooledBufferWriter());
        var body = new Mux.Tests.Protocol.RawBody(arguments);
        long length = FrameWriter.Write(staged, FrameType.Request, 9, 0x01020304, ref body);
        using var message = new OutboundMessage(staged.Detach(), length, 1024, pool);
        var output = new ArrayBufferWriter<byte>();
        int fragments = 1;
        while (!message.WriteNextFragment(output))
        {
            fragments++;
        }

        var buffer = new ReadOnlySequence<byte>(output.WrittenMemory);
        var frames = new List<(FrameType Type, FrameFlags Flags, byte[] Payload, uint MethodId, uint Size)>();
        while (FrameReader.TryRead(ref buffer, 4096, out Frame frame))
        {
            frames.Add((frame.Type, frame.Flags, frame.Payload.ToArray(), frame.MethodId, frame.MessageSize));
        }

        Assert.True(buffer.IsEmpty);
        Assert.Equal(3, fragments); // 4 + 2503 message bytes in 1024-byte fragments.
        Assert.Equal(3, frames.Count);
        Assert.Equal((FrameType.Request, FrameFlags.MoreFragments, 0x01020304u, (uint)(4 + arguments.Length)), (frames[0].Type, frames[0].Flags, frames[0].MethodId, frames[0].Size));
        Assert.Equal((FrameType.Continuation, FrameFlags.MoreFragments), (frames[1].Type, frames[1].Flags));
        Assert.Equal((FrameType.Continuation, FrameFlags.None), (frames[2].Type, frames[2].Flags));
        Assert.Equal(arguments, frames.SelectMany(static f => f.Payload).ToArray());
    }

    [Theory]
    [InlineData((byte)FrameType.Cancel)]
    [InlineData((byte)FrameType.Ping)]
    [InlineData((byte)FrameType.GoAway)]
    [InlineData((byte)FrameType.Hello)]
    public void MoreFragments_OnAFrameThatIsNotPartOfACallsMessage_IsRejected(byte type)
    {
        byte[] bytes = FragmentWire.First((FrameType)type, 3, 100, new byte[8]);

        AssertRejected(bytes, "only a call's Request, Response, Error and Continuation frames may be fragmented");
    }

    [Fact]
    public void AFirstFragmentForCallZero_IsRejected()
    {
        AssertRejected(FragmentWire.First(FrameType.Error, 0, 100, new byte[8]), "may be fragmented");
    }

    [Fact]
    public void AContinuationForCallZero_IsRejected()
    {
        AssertRejected(FragmentWire.Continuation(0, new byte[8], more: false), "A Continuation frame belongs to a call; it carries call id 0.");
    }

    [Theory]
    [InlineData(10)]
    [InlineData(9)]
    [InlineData(0)]
    public void AFirstFragmentThatAnnouncesNoMoreThanItCarries_IsRejected(uint messageSize)
    {
        AssertRejected(FragmentWire.First(FrameType.Response, 3, messageSize, new byte[10]), "a fragmented message must be larger than its first fragment");
    }

    [Theory]
    [InlineData((byte)FrameType.Request, 0)]
    [InlineData((byte)FrameType.Response, 3)]
    [InlineData((byte)FrameType.Error, 2)]
    public void AFirstFragmentTooShortForItsMessageSize_IsRejected(byte type, int bodyLength)
    {
        byte[] bytes = FragmentWire.Whole((FrameType)type, 3, new byte[bodyLength]);
        bytes[5] = (byte)FrameFlags.MoreFragments;

        AssertRejected(bytes, $"A {(FrameType)type} frame needs the size of its whole message, as a first fragment (4 bytes); {bodyLength} bytes are left of its body.");
    }

    [Fact]
    public void AContinuationWithTraceContext_IsRejected()
    {
        byte[] bytes = FragmentWire.Continuation(4, new byte[8], more: true);
        bytes[5] |= (byte)FrameFlags.TraceContext;

        AssertRejected(bytes, "are not supported");
    }
}
