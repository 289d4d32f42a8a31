using System.Buffers;
using System.Buffers.Binary;
using System.Diagnostics;
using Mux.Diagnostics;
using Mux.Protocol;
using Mux.Tests.Fragments;
using Mux.Tests.Protocol;

namespace Mux.Tests.Deadlines;

/// <summary>The deadline header of Requests on the wire (docs/protocol.md, "Deadlines").</summary>
public class DeadlineFrameTests
{
    private static readonly byte[] s_arguments = [0x92, 0x02, 0x03];

    [Fact]
    public void RequestWithADeadline_CarriesTheRemainingMillisecondsAsAU32AfterTheMethodId()
    {
        byte[] bytes = Write(new RequestBody<RawBody>(new RawBody(s_arguments), 1500, null, null), FrameFlags.Deadline);

        int header = ProtocolConstants.FrameHeaderSize + ProtocolConstants.RequestHeaderSize;
        Assert.Equal((byte)FrameFlags.Deadline, bytes[5]);
        Assert.Equal(1500u, BinaryPrimitives.ReadUInt32LittleEndian(bytes.AsSpan(header)));
        Assert.Equal(s_arguments, bytes[(header + DeadlineHeader.Size)..]);

        Frame frame = ReadOne(bytes);
        Assert.True(frame.HasDeadline);
        Assert.Equal(1500u, frame.RemainingMilliseconds);
        Assert.Equal(s_arguments, frame.Payload.ToArray());
    }

    [Fact]
    public void RequestWithADeadlineAndATraceContext_ReadsBoth_DeadlineFirst()
    {
        using var activity = new Activity("caller").SetIdFormat(ActivityIdFormat.W3C).Start();
        var body = new RequestBody<RawBody>(new RawBody(s_arguments), 42, activity, null);
        Assert.Equal(FrameFlags.Deadline | FrameFlags.TraceContext, body.Flags);

        byte[] bytes = Write(body, body.Flags);

        int header = ProtocolConstants.FrameHeaderSize + ProtocolConstants.RequestHeaderSize;
        Assert.Equal(42u, BinaryPrimitives.ReadUInt32LittleEndian(bytes.AsSpan(header)));
        Assert.Equal(55, bytes[header + DeadlineHeader.Size]); // The traceparent's length comes next.
        Frame frame = ReadOne(bytes);
        Assert.Equal(42u, frame.RemainingMilliseconds);
        Assert.True(TraceContextHeader.TryParse(frame.TraceContext, out ActivityContext context));
        Assert.Equal(activity.TraceId, context.TraceId);
        Assert.Equal(s_arguments, frame.Payload.ToArray());
    }

    [Fact]
    public void RequestWithoutTheFlag_HasNoDeadline()
    {
        Frame frame = ReadOne(Write(new RawBody(s_arguments), FrameFlags.None));

        Assert.False(frame.HasDeadline);
        Assert.Equal(s_arguments, frame.Payload.ToArray());
    }

    [Theory]
    [InlineData(0)]
    [InlineData(3)]
    public void RequestWithTheDeadlineFlag_ButFewerThanFourBytesAfterTheMethodId_IsAProtocolError(int keep)
    {
        byte[] full = Write(new RequestBody<RawBody>(new RawBody([]), 1500, null, null), FrameFlags.Deadline);
        byte[] bytes = full[..(ProtocolConstants.FrameHeaderSize + ProtocolConstants.RequestHeaderSize + keep)];
        BinaryPrimitives.WriteUInt32LittleEndian(bytes, (uint)(bytes.Length - ProtocolConstants.LengthPrefixSize));

        var ex = Assert.Throws<MuxProtocolException>(() => ReadOne(bytes));
        Assert.Equal($"A Request frame needs the deadline its Deadline flag announces (4 bytes); {keep} bytes are left of its body.", ex.Message);
    }

    [Fact]
    public void ARequestsMethodIdAndDeadline_ReadTheSame_WhateverSegmentsTheyStraddle()
    {
        byte[] whole = Write(new RequestBody<RawBody>(new RawBody(s_arguments), 1500, null, null), FrameFlags.Deadline);

        // The same Request as the first fragment of a longer message: its message size comes first.
        byte[] afterHeader = whole[ProtocolConstants.FrameHeaderSize..];
        byte[] first = FragmentWire.First(FrameType.Request, 7, (uint)afterHeader.Length + 100, afterHeader, FrameFlags.Deadline);
        foreach (byte[] bytes in new[] { whole, first })
        {
            var splits = Enumerable.Range(0, bytes.Length + 1).Select(split => TestSegment.Chain(bytes[..split], bytes[split..]));
            foreach (ReadOnlySequence<byte> segments in splits.Append(TestSegment.Chain(bytes.Select(static b => new[] { b }).ToArray())))
            {
                ReadOnlySequence<byte> buffer = segments;
                Assert.True(FrameReader.TryRead(ref buffer, 64 * 1024, out Frame frame));
                Assert.True(buffer.IsEmpty);
                Assert.Equal(0x5f7a008eu, frame.MethodId);
                Assert.Equal(1500u, frame.RemainingMilliseconds);
                Assert.Equal(s_arguments, frame.Payload.ToArray());
            }
        }
    }

    [Fact]
    public void TheDeadlineFlagOnAResponse_IsAProtocolError()
    {
        byte[] bytes = Write(new RawBody([0xc0]), FrameFlags.Deadline, FrameType.Response);

        var ex = Assert.Throws<MuxProtocolException>(() => ReadOne(bytes));
        Assert.Contains("Frame flags 0x04 are not supported", ex.Message, StringComparison.Ordinal);
    }

    [Theory]
    [InlineData(1000, 400, 600u)]
    [InlineData(1000, 1000, 0u)]
    [InlineData(1000, 5000, 0u)]
    [InlineData(long.MaxValue - 1, 0, uint.MaxValue)]
    public void RemainingMilliseconds_IsWhatIsLeft_ClampedToTheHeader(long deadline, long now, uint expected)
    {
        Assert.Equal(expected, DeadlineHeader.RemainingMilliseconds(deadline, now, frequency: 1000));
    }

    private static byte[] Write<TBody>(TBody body, FrameFlags flags, FrameType type = FrameType.Request)
        where TBody : struct, IFrameBody
    {
        using var output = new PooledBufferWriter();
        FrameWriter.Write(output, type, 7, type == FrameType.Request ? 0x5f7a008eu : 0, ref body, flags);
        return output.WrittenSpan.ToArray();
    }

    private static Frame ReadOne(byte[] bytes)
    {
        var buffer = new ReadOnlySequence<byte>(bytes);
        Assert.True(FrameReader.TryRead(ref buffer, 64 * 1024, out Frame frame));
        Assert.True(buffer.IsEmpty);
        return frame;
    }
}
