using System.Buffers;
using System.Buffers.Binary;
using System.IO.Pipelines;
using Mux.Protocol;
using Mux.Serialization;

namespace Mux.Benchmarks.AllocationProbe;

/// <summary>
/// Wire-level stand-ins for a Mux client and a Mux server that allocate nothing per call: they
/// speak the protocol with <see cref="FrameReader"/> and pre-encoded frames whose call id is
/// patched in place. Put against the real other side, they make the allocations in the process
/// that side's alone; put against each other, they show the harness's own share (which must be 0).
/// </summary>
internal static class StubFrames
{
    /// <summary>Where the call id sits in every frame (after the length prefix, type and flags).</summary>
    public const int CallIdOffset = 6;

    public static byte[] Encode<TBody>(FrameType type, uint methodId, TBody body)
        where TBody : struct, IFrameBody
    {
        using var output = new PooledBufferWriter();
        FrameWriter.Write(output, type, 0, methodId, ref body);
        return output.WrittenSpan.ToArray();
    }

    public static byte[] Hello(FrameType type) =>
        Encode(type, 0, new HandshakeSettings(ProtocolConstants.Version, 4 * 1024 * 1024, int.MaxValue, null));

    /// <summary>Appends a pre-encoded frame with the given call id.</summary>
    public static void Write(PipeWriter output, byte[] frame, uint callId)
    {
        Span<byte> span = output.GetSpan(frame.Length);
        frame.CopyTo(span);
        BinaryPrimitives.WriteUInt32LittleEndian(span[CallIdOffset..], callId);
        output.Advance(frame.Length);
    }
}

/// <summary>Answers Hello with HelloAck and every Request for one method with one fixed Response.</summary>
internal sealed class StubServer
{
    private static readonly byte[] s_helloAck = StubFrames.Hello(FrameType.HelloAck);

    private readonly PipeReader _input;
    private readonly PipeWriter _output;
    private readonly uint _methodId;
    private readonly byte[] _response;
    private Task _loop = Task.CompletedTask;

    private StubServer(IDuplexPipe pipe, uint methodId, byte[] response)
    {
        _input = pipe.Input;
        _output = pipe.Output;
        _methodId = methodId;
        _response = response;
    }

    /// <summary>Completes when the client has closed the connection.</summary>
    public Task Completion => _loop;

    /// <param name="pipe">The server's end of the connection.</param>
    /// <param name="methodId">The method it serves; any other gets an UnknownMethod error.</param>
    /// <param name="response">The Response frame it sends, call id patched in.</param>
    public static StubServer Start(IDuplexPipe pipe, uint methodId, byte[] response)
    {
        var server = new StubServer(pipe, methodId, response);
        server._loop = server.RunAsync();
        return server;
    }

    private async Task RunAsync()
    {
        try
        {
            while (true)
            {
                ReadResult result = await _input.ReadAsync();
                if (Answer(result))
                {
                    await _output.FlushAsync();
                }

                if (result.IsCompleted || result.IsCanceled)
                {
                    break;
                }
            }
        }
        finally
        {
            await _input.CompleteAsync();
            await _output.CompleteAsync();
        }
    }

    /// <summary>Writes the answers to every complete frame read; true if it wrote any.</summary>
    private bool Answer(in ReadResult result)
    {
        ReadOnlySequence<byte> buffer = result.Buffer;
        bool wrote = false;
        while (FrameReader.TryRead(ref buffer, int.MaxValue, out Frame frame))
        {
            switch (frame.Type)
            {
                case FrameType.Hello:
                    StubFrames.Write(_output, s_helloAck, 0);
                    wrote = true;
                    break;
                case FrameType.Request when frame.MethodId == _methodId:
                    StubFrames.Write(_output, _response, frame.CallId);
                    wrote = true;
                    break;
                case FrameType.Request:
                    WriteUnknownMethod(frame.CallId);
                    wrote = true;
                    break;
                default:
                    break; // Cancel, Ping...: not used by the probe.
            }
        }

        _input.AdvanceTo(buffer.Start, buffer.End);
        return wrote;
    }

    /// <summary>The answer to a method it does not serve (never sent when the method ids are right).</summary>
    private void WriteUnknownMethod(uint callId)
    {
        using var encoded = new PooledBufferWriter();
        var error = new ErrorBody(MuxStatusCode.UnknownMethod, $"The stub server only serves method 0x{_methodId:x8}.", null);
        FrameWriter.Write(encoded, FrameType.Error, callId, 0, ref error);
        _output.Write(encoded.WrittenSpan);
    }
}

/// <summary>Sends a batch of one fixed Request (one request, or many at once) and waits for
/// every Response before the next batch.</summary>
internal sealed class StubClient : IProbeCaller
{
    private static readonly byte[] s_hello = StubFrames.Hello(FrameType.Hello);

    private readonly PipeReader _input;
    private readonly PipeWriter _output;
    private readonly byte[] _request;
    private readonly int _batch;
    private uint _lastCallId;

    private StubClient(IDuplexPipe pipe, byte[] request, int batch)
    {
        _input = pipe.Input;
        _output = pipe.Output;
        _request = request;
        _batch = batch;
    }

    /// <summary>Sends Hello and waits for HelloAck.</summary>
    /// <param name="pipe">The client's end of the connection.</param>
    /// <param name="request">The Request frame it sends, call id patched in.</param>
    /// <param name="batch">How many requests it sends at once.</param>
    public static async Task<StubClient> ConnectAsync(IDuplexPipe pipe, byte[] request, int batch)
    {
        var client = new StubClient(pipe, request, batch);
        StubFrames.Write(client._output, s_hello, 0);
        await client._output.FlushAsync();
        while (client.Consume(await client._input.ReadAsync(), FrameType.HelloAck, 0, 0) == 0)
        {
        }

        return client;
    }

    public async Task RunAsync(int batchesPerRound, long[] marks)
    {
        marks[0] = GC.GetTotalAllocatedBytes(precise: true);
        for (int round = 1; round < marks.Length; round++)
        {
            for (int i = 0; i < batchesPerRound; i++)
            {
                // Every request of the batch in one flush, then every response.
                uint first = _lastCallId + 1;
                for (int call = 0; call < _batch; call++)
                {
                    StubFrames.Write(_output, _request, ++_lastCallId);
                }

                await _output.FlushAsync();
                int answered = 0;
                while (answered < _batch)
                {
                    answered += Consume(await _input.ReadAsync(), FrameType.Response, first, _lastCallId);
                }
            }

            marks[round] = GC.GetTotalAllocatedBytes(precise: true);
        }
    }

    public async ValueTask DisposeAsync()
    {
        await _output.CompleteAsync();
        await _input.CompleteAsync();
    }

    /// <summary>Reads every complete frame; returns how many of them were awaited ones: of the
    /// awaited type, with a call id from <paramref name="firstCallId"/> to <paramref name="lastCallId"/>.</summary>
    private int Consume(in ReadResult result, FrameType awaitedType, uint firstCallId, uint lastCallId)
    {
        ReadOnlySequence<byte> buffer = result.Buffer;
        int arrived = 0;
        while (FrameReader.TryRead(ref buffer, int.MaxValue, out Frame frame))
        {
            if (frame.Type == awaitedType && frame.CallId >= firstCallId && frame.CallId <= lastCallId)
            {
                arrived++;
            }
            else if (frame.Type == FrameType.Error)
            {
                ErrorBody error = ErrorBody.Read(frame.Payload.ToArray());
                throw new InvalidOperationException($"The server answered call {frame.CallId} with {error.Code}: {error.Message}");
            }
        }

        _input.AdvanceTo(buffer.Start, buffer.End);
        if (arrived == 0 && (result.IsCompleted || result.IsCanceled))
        {
            throw new InvalidOperationException("The server closed the connection.");
        }

        return arrived;
    }
}
