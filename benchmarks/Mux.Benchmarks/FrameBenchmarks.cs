using System.Buffers;
using BenchmarkDotNet.Attributes;
using BenchmarkDotNet.Configs;
using Mux.Protocol;
using MessagePack;
using Mux.Serialization;

namespace Mux.Benchmarks;

/// <summary>
/// Encoding and decoding one frame of each type, without any connection around it. Encoding goes
/// through <see cref="FrameWriter"/> into one reused <see cref="PooledBufferWriter"/> (reset per
/// operation, as a connection's staging buffer is); decoding is <see cref="FrameReader.TryRead"/>
/// over a pre-encoded frame, which splits the frame and slices its payload without copying it.
/// Both must allocate nothing.
/// </summary>
[MemoryDiagnoser]
[Config(typeof(MuxJobConfig))]
[GroupBenchmarksBy(BenchmarkLogicalGroupRule.ByCategory)]
[CategoriesColumn]
public class FrameBenchmarks
{
    private static readonly MessagePackSerializerOptions s_options = MuxSerializerOptions.ForClient(MessagePackSerializerOptions.Standard);

    private const uint CallId = 7;
    private const int MaxFrameSize = 4 * 1024 * 1024;

    // The Add(2, 3) of docs/protocol.md: method 0x5f7a008e, arguments [2, 3].
    private const uint MethodId = 0x5f7a008e;

    private static readonly byte[] s_pingPayload = [1, 2, 3, 4, 5, 6, 7, 8];
    private static readonly byte[] s_goAwayPayload = [(byte)CallId, 0, 0, 0];

    private readonly HandshakeSettings _settings = new(ProtocolConstants.Version, MaxFrameSize, int.MaxValue, null);
    private readonly PooledBufferWriter _output = new();

    private ReadOnlySequence<byte> _request;
    private ReadOnlySequence<byte> _response;
    private ReadOnlySequence<byte> _error;
    private ReadOnlySequence<byte> _cancel;
    private ReadOnlySequence<byte> _ping;
    private ReadOnlySequence<byte> _goAway;
    private ReadOnlySequence<byte> _hello;

    [GlobalSetup]
    public void Setup()
    {
        _request = Encoded(EncodeRequest);
        _response = Encoded(EncodeResponse);
        _error = Encoded(EncodeError);
        _cancel = Encoded(EncodeCancel);
        _ping = Encoded(EncodePing);
        _goAway = Encoded(EncodeGoAway);
        _hello = Encoded(EncodeHello);

        // The Request must be the 17 bytes the protocol document shows.
        byte[] request = _request.ToArray();
        if (Convert.ToHexString(request) != "0D0000000300070000008E007A5F920203")
        {
            throw new InvalidOperationException("The Request frame is not the one docs/protocol.md shows: " + Convert.ToHexString(request));
        }
    }

    [GlobalCleanup]
    public void Cleanup() => _output.Dispose();

    [Benchmark]
    [BenchmarkCategory("Encode")]
    public int EncodeRequest()
    {
        _output.Reset();
        var body = new MessagePackBody<AddArguments>(new AddArguments(2, 3), s_options);
        return FrameWriter.Write(_output, FrameType.Request, CallId, MethodId, ref body);
    }

    [Benchmark]
    [BenchmarkCategory("Encode")]
    public int EncodeResponse()
    {
        _output.Reset();
        var body = new MessagePackBody<int>(5, s_options);
        return FrameWriter.Write(_output, FrameType.Response, CallId, 0, ref body);
    }

    [Benchmark]
    [BenchmarkCategory("Encode")]
    public int EncodeError()
    {
        _output.Reset();
        var body = new ErrorBody(MuxStatusCode.HandlerFailed, "The user does not exist.", "System.InvalidOperationException");
        return FrameWriter.Write(_output, FrameType.Error, CallId, 0, ref body);
    }

    [Benchmark]
    [BenchmarkCategory("Encode")]
    public int EncodeCancel()
    {
        _output.Reset();
        return FrameWriter.WriteRaw(_output, FrameType.Cancel, CallId, ReadOnlySpan<byte>.Empty);
    }

    [Benchmark]
    [BenchmarkCategory("Encode")]
    public int EncodePing()
    {
        _output.Reset();
        return FrameWriter.WriteRaw(_output, FrameType.Ping, CallId, s_pingPayload);
    }

    [Benchmark]
    [BenchmarkCategory("Encode")]
    public int EncodeGoAway()
    {
        _output.Reset();
        return FrameWriter.WriteRaw(_output, FrameType.GoAway, 0, s_goAwayPayload);
    }

    [Benchmark]
    [BenchmarkCategory("Encode")]
    public int EncodeHello()
    {
        _output.Reset();
        var body = _settings;
        return FrameWriter.Write(_output, FrameType.Hello, 0, 0, ref body);
    }

    [Benchmark]
    [BenchmarkCategory("Decode")]
    public long DecodeRequest() => Decode(_request);

    [Benchmark]
    [BenchmarkCategory("Decode")]
    public long DecodeResponse() => Decode(_response);

    [Benchmark]
    [BenchmarkCategory("Decode")]
    public long DecodeError() => Decode(_error);

    [Benchmark]
    [BenchmarkCategory("Decode")]
    public long DecodeCancel() => Decode(_cancel);

    [Benchmark]
    [BenchmarkCategory("Decode")]
    public long DecodePing() => Decode(_ping);

    [Benchmark]
    [BenchmarkCategory("Decode")]
    public long DecodeGoAway() => Decode(_goAway);

    [Benchmark]
    [BenchmarkCategory("Decode")]
    public long DecodeHello() => Decode(_hello);

    private static long Decode(ReadOnlySequence<byte> encoded)
    {
        ReadOnlySequence<byte> buffer = encoded;
        if (!FrameReader.TryRead(ref buffer, MaxFrameSize, out Frame frame))
        {
            throw new InvalidOperationException("The frame is incomplete.");
        }

        // Everything the reader produced, so that none of it can be optimized away.
        return frame.CallId + frame.MethodId + (long)frame.Type + frame.Payload.Length + buffer.Length;
    }

    private ReadOnlySequence<byte> Encoded(Func<int> encode)
    {
        int size = encode();
        byte[] frame = _output.WrittenSpan.ToArray();
        if (frame.Length != size)
        {
            throw new InvalidOperationException($"The encoder reported {size} bytes but wrote {frame.Length}.");
        }

        // Decoding it must give back the whole frame.
        ReadOnlySequence<byte> sequence = new(frame);
        ReadOnlySequence<byte> rest = sequence;
        if (!FrameReader.TryRead(ref rest, MaxFrameSize, out _) || !rest.IsEmpty)
        {
            throw new InvalidOperationException("An encoded frame does not decode to one whole frame.");
        }

        return sequence;
    }
}
