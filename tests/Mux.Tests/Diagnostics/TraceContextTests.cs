using System.Buffers;
using System.Diagnostics;
using System.IO.Pipelines;
using MessagePack;
using Mux.Diagnostics;
using Mux.Protocol;
using Mux.Tests.Protocol;
using Mux.Transport;

namespace Mux.Tests.Diagnostics;

/// <summary>The trace-context header of Requests on the wire (docs/protocol.md, "Trace context").</summary>
[Collection(nameof(TelemetryCollection))]
public class TraceContextTests
{
    private static readonly byte[] s_arguments = [0x92, 0x02, 0x03];

    [Fact]
    public void TracedRequest_RoundTripsTheTraceParentAndTraceState_AndLeavesTheArgumentsIntact()
    {
        using var activity = new Activity("caller").SetIdFormat(ActivityIdFormat.W3C);
        activity.ActivityTraceFlags = ActivityTraceFlags.Recorded;
        activity.TraceStateString = "vendor=value,other=1";
        activity.Start();

        Frame frame = ReadOne(WriteTraced(activity));

        Assert.Equal(FrameFlags.TraceContext, frame.Flags);
        Assert.Equal(s_arguments, frame.Payload.ToArray());
        Assert.True(TraceContextHeader.TryParse(frame.TraceContext, out ActivityContext context));
        Assert.Equal(activity.TraceId, context.TraceId);
        Assert.Equal(activity.SpanId, context.SpanId);
        Assert.Equal(ActivityTraceFlags.Recorded, context.TraceFlags);
        Assert.Equal("vendor=value,other=1", context.TraceState);
        Assert.True(context.IsRemote);
    }

    [Fact]
    public void TracedRequest_CarriesTheW3CTraceParentTextAfterTheMethodId()
    {
        using var activity = new Activity("caller").SetIdFormat(ActivityIdFormat.W3C).Start();

        byte[] bytes = WriteTraced(activity);

        int header = ProtocolConstants.FrameHeaderSize + ProtocolConstants.RequestHeaderSize;
        Assert.Equal((byte)FrameFlags.TraceContext, bytes[5]);
        Assert.Equal(55, bytes[header]);
        Assert.Equal(activity.Id, System.Text.Encoding.ASCII.GetString(bytes, header + 1, 55));
        Assert.Equal(new byte[] { 0, 0 }, bytes[(header + 56)..(header + 58)]); // No tracestate.
        Assert.Equal(s_arguments, bytes[(header + 58)..]);
    }

    [Theory]
    [InlineData(3)] // The traceparent length byte claims more than the frame holds.
    [InlineData(60)] // The tracestate length runs past the end.
    public void TracedRequest_WhoseHeaderRunsPastTheFrame_IsAProtocolError(int keep)
    {
        using var activity = new Activity("caller").SetIdFormat(ActivityIdFormat.W3C).Start();
        byte[] full = WriteTraced(activity);
        int header = ProtocolConstants.FrameHeaderSize + ProtocolConstants.RequestHeaderSize;
        byte[] bytes = full[..(header + keep)];
        if (keep == 3)
        {
            bytes[header] = 200;
        }
        else
        {
            bytes[header + 56] = 0xff;
        }

        BitConverter.TryWriteBytes(bytes.AsSpan(0, 4), (uint)(bytes.Length - 4));

        var ex = Assert.Throws<MuxProtocolException>(() => ReadOne(bytes));
        Assert.Contains("trace-context header runs past the end", ex.Message, StringComparison.Ordinal);
    }

    [Theory]
    [InlineData("00-0AF7651916CD43DD8448EB211C80319C-b7ad6b7169203331-01")] // Upper-case hex.
    [InlineData("00-00000000000000000000000000000000-b7ad6b7169203331-01")] // All-zero trace id.
    [InlineData("00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01")] // All-zero span id.
    [InlineData("ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")] // Version ff.
    [InlineData("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-extra")] // Version 00 has no more fields.
    [InlineData("00_0af7651916cd43dd8448eb211c80319c_b7ad6b7169203331_01")] // Wrong separators.
    [InlineData("00-0af7651916cd43dd8448eb211c80319c-b7ad6b71692033")] // Too short.
    public void TryParse_OfAnInvalidTraceParent_IgnoresIt(string traceParent)
    {
        Assert.False(TraceContextHeader.TryParse(new ReadOnlySequence<byte>(Header(traceParent, "")), out ActivityContext context));
        Assert.Equal(default, context);
    }

    [Fact]
    public void TryParse_OfAFutureVersionWithMoreFields_ReadsTheFirstFour()
    {
        byte[] header = Header("01-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-future", "");

        Assert.True(TraceContextHeader.TryParse(new ReadOnlySequence<byte>(header), out ActivityContext context));
        Assert.Equal("0af7651916cd43dd8448eb211c80319c", context.TraceId.ToHexString());
        Assert.Equal("b7ad6b7169203331", context.SpanId.ToHexString());
    }

    [Fact]
    public async Task Client_NeverSendsTraceContext_ToAServerThatDidNotAnnounceIt()
    {
        using var recorder = new SpanRecorder();
        (DuplexPipeTransport clientSide, DuplexPipeTransport serverSide) = DuplexPipeTransport.CreatePair();
        PipeReader fromClient = serverSide.Input;
        Task<MuxClient> connecting = MuxClient.ConnectAsync(clientSide);

        await ReadFrameAsync(fromClient, hello => Assert.Equal(FrameType.Hello, hello.Type));
        // A server of an earlier build: its settings map has no traceContext key.
        await WriteAsync(serverSide.Output, OldServerHelloAck());
        await using MuxClient client = await connecting.WaitAsync(TelemetryHost.Patience);

        using var root = new Activity("test root").Start();
        FrameFlags flags = await CallOnceAsync(client, fromClient, serverSide.Output);
        Assert.Equal(FrameFlags.None, flags & FrameFlags.TraceContext); // (It does send its deadline.)
        root.Stop();
        // A listener was on and the client did make a span: it just did not send its context.
        Activity[] spans = await recorder.WaitForSpansAsync(root.TraceId, 1, TelemetryHost.Patience);
        Assert.Equal(ActivityKind.Client, Assert.Single(spans).Kind);
    }

    [Fact]
    public async Task Client_SendsNoTraceContext_ForAnActivityThatIsNotW3C()
    {
        (DuplexPipeTransport clientSide, DuplexPipeTransport serverSide) = DuplexPipeTransport.CreatePair();
        PipeReader fromClient = serverSide.Input;
        Task<MuxClient> connecting = MuxClient.ConnectAsync(clientSide);

        await ReadFrameAsync(fromClient, hello => Assert.Equal(FrameType.Hello, hello.Type));
        // A server of this build, which reads trace context.
        await WriteAsync(serverSide.Output, ProtocolTestHelpers.WriteFrame(FrameType.HelloAck, 0, 0, new HandshakeSettings(ProtocolConstants.Version, 4 * 1024 * 1024, 1000, null)));
        await using MuxClient client = await connecting.WaitAsync(TelemetryHost.Patience);

        // A hierarchical id has no traceparent form.
        using var root = new Activity("test root").SetIdFormat(ActivityIdFormat.Hierarchical).Start();
        FrameFlags flags = await CallOnceAsync(client, fromClient, serverSide.Output);
        Assert.Equal(FrameFlags.None, flags & FrameFlags.TraceContext);
    }

    /// <summary>Makes one call through a hand-driven server, answers it with 5, checks the caller
    /// got that, and returns the flags its Request carried.</summary>
    private static async Task<FrameFlags> CallOnceAsync(MuxClient client, PipeReader fromClient, PipeWriter toClient)
    {
        ValueTask<int> call = client.InvokeAsync<RawArguments, int>(0x1234, new RawArguments());
        FrameFlags flags = FrameFlags.None;
        uint callId = 0;
        await ReadFrameAsync(fromClient, request =>
        {
            Assert.Equal(FrameType.Request, request.Type);
            flags = request.Flags;
            callId = request.CallId;
        });
        await WriteAsync(toClient, ProtocolTestHelpers.WriteFrame(FrameType.Response, callId, 0, new RawBody([0x05])));
        Assert.Equal(5, await call.AsTask().WaitAsync(TelemetryHost.Patience));
        return flags;
    }

    private static byte[] OldServerHelloAck()
    {
        var output = new ArrayBufferWriter<byte>();
        var writer = new MessagePackWriter(output);
        Span<byte> prefix = writer.GetSpan(ProtocolConstants.HelloHeaderSize);
        BitConverter.TryWriteBytes(prefix, ProtocolConstants.Magic);
        BitConverter.TryWriteBytes(prefix[4..], ProtocolConstants.Version);
        writer.Advance(ProtocolConstants.HelloHeaderSize);
        writer.WriteMapHeader(2);
        writer.Write("maxFrameSize");
        writer.Write(4 * 1024 * 1024);
        writer.Write("maxConcurrentCalls");
        writer.Write(1000);
        writer.Flush();
        return ProtocolTestHelpers.WriteFrame(FrameType.HelloAck, 0, 0, new RawBody(output.WrittenSpan.ToArray()));
    }

    private static byte[] WriteTraced(Activity activity)
    {
        using var output = new PooledBufferWriter();
        var body = new RequestBody<RawBody>(new RawBody(s_arguments), null, activity, null);
        FrameWriter.Write(output, FrameType.Request, 7, 0x5f7a008e, ref body, FrameFlags.TraceContext);
        return output.WrittenSpan.ToArray();
    }

    private static Frame ReadOne(byte[] bytes)
    {
        var rest = new ReadOnlySequence<byte>(bytes);
        Assert.True(FrameReader.TryRead(ref rest, 1024 * 1024, out Frame frame));
        Assert.True(rest.IsEmpty);
        return frame;
    }

    private static byte[] Header(string traceParent, string traceState) =>
    [
        (byte)traceParent.Length, .. System.Text.Encoding.ASCII.GetBytes(traceParent),
        (byte)traceState.Length, (byte)(traceState.Length >> 8), .. System.Text.Encoding.ASCII.GetBytes(traceState),
    ];

    /// <summary>Reads one frame and shows it to <paramref name="inspect"/> while its buffer is valid.</summary>
    private static async Task ReadFrameAsync(PipeReader input, Action<Frame> inspect)
    {
        using var timeout = new CancellationTokenSource(TelemetryHost.Patience);
        while (true)
        {
            ReadResult result = await input.ReadAsync(timeout.Token);
            ReadOnlySequence<byte> buffer = result.Buffer;
            if (FrameReader.TryRead(ref buffer, 1024 * 1024, out Frame frame))
            {
                inspect(frame);
                input.AdvanceTo(buffer.Start);
                return;
            }

            Assert.False(result.IsCompleted, "The client closed the connection.");
            input.AdvanceTo(buffer.Start, buffer.End);
        }
    }

    private static async Task WriteAsync(PipeWriter output, byte[] bytes)
    {
        await output.WriteAsync(bytes);
    }
}

/// <summary>An argument list of (2, 3), written as a MessagePack array by its own formatter.</summary>
[MessagePackObject]
public struct RawArguments
{
    [Key(0)]
    public int A { get; set; }

    [Key(1)]
    public int B { get; set; }
}
