using System.Buffers.Binary;
using System.IO.Pipelines;
using MessagePack;
using Mux.Client;
using Mux.Protocol;
using Mux.Samples.Contracts;
using Mux.Serialization;
using Mux.Transport;

namespace Mux.Benchmarks;

/// <summary>The frames <see cref="EngineReaderBenchmarks"/> feeds a connection's reader.</summary>
public enum InboundFrame
{
    /// <summary>Responses to call ids the client never sent: the answer path (pending-table
    /// lookup) up to where a real answer would complete its call.</summary>
    Response,

    /// <summary>StreamCredit frames for call ids with no stream: split, looked up, dropped.</summary>
    StreamCredit,
}

/// <summary>
/// The engine suites' ONE seam into Mux's internals (EngineOutboundBenchmarks,
/// EngineReaderBenchmarks): one client connection over production pipes whose far ends the
/// benchmark drives itself, a small frame sent through the connection's outbound path, and frames
/// encoded for its reader. Nothing else in those suites touches an internal type, so an engine
/// rebuild changes this file alone (each member is a line or two over the engine).
/// </summary>
internal sealed class EngineSeam : IAsyncDisposable
{
    private const int MaxFrameSize = 4 * 1024 * 1024;

    // The frame the outbound suite sends: StreamCredit(1) for a made-up call id, 14 bytes.
    private const int SmallFrameCredit = 1;

    private readonly MuxClient _client;
    private readonly ClientConnection _connection;
    private readonly List<ValueTask<int>> _heldCalls = [];

    private EngineSeam(MuxClient client, PipeWriter toConnection, PipeReader fromConnection)
    {
        _client = client;
        _connection = client.Connection;
        ToConnection = toConnection;
        FromConnection = fromConnection;
    }

    /// <summary>The far end of what the connection receives: bytes written and flushed here are
    /// what its reader loop parses, inline on the flushing thread (as on a socket's receive loop).</summary>
    public PipeWriter ToConnection { get; }

    /// <summary>The far end of what the connection sends. Its reader runs inline on the flushing
    /// thread, as the socket transport's send loop does.</summary>
    public PipeReader FromConnection { get; }

    /// <summary>The size on the wire of the frame <see cref="SendSmallFrame"/> sends.</summary>
    public static int SmallFrameBytes { get; } = ProtocolConstants.LengthPrefixSize + ProtocolConstants.CommonHeaderSize + ProtocolConstants.StreamCreditPayloadSize;

    /// <summary>Frames received by the connection so far (its public statistics).</summary>
    public long FramesReceived => _client.GetStatistics().FramesReceived;

    /// <summary>
    /// A client connection over the pipes a socket transport uses (TransportPipes), handshaken
    /// with a HelloAck written here: no server runs. <paramref name="startDrain"/> is called with
    /// the connection's outgoing side before the Hello is sent; it must keep reading it.
    /// </summary>
    public static async Task<EngineSeam> ConnectAsync(Action<PipeReader> startDrain)
    {
        Pipe inbound = TransportPipes.CreateInput(MaxFrameSize);
        Pipe outbound = TransportPipes.CreateOutput();
        startDrain(outbound.Reader);
        var transport = new DuplexPipeTransport(new DuplexPipe(inbound.Reader, outbound.Writer));
        var options = new MuxClientOptions
        {
            CallTimeout = Timeout.InfiniteTimeSpan,
            KeepAliveInterval = Timeout.InfiniteTimeSpan,
        };

        // ConnectAsync sends Hello before it first waits; the HelloAck below then completes it.
        Task<MuxClient> connecting = MuxClient.ConnectAsync(transport, options, "engine-benchmark");
        using (var helloAck = new PooledBufferWriter())
        {
            var body = new HandshakeSettings(ProtocolConstants.Version, MaxFrameSize, int.MaxValue, null);
            FrameWriter.Write(helloAck, FrameType.HelloAck, 0, 0, ref body);
            await inbound.Writer.WriteAsync(helloAck.WrittenMemory);
        }

        MuxClient client = await connecting.WaitAsync(TimeSpan.FromSeconds(10));
        return new EngineSeam(client, inbound.Writer, outbound.Reader);
    }

    /// <summary>Sends one small frame (StreamCredit for <paramref name="callId"/>) through the
    /// connection's outbound path, as any sender does: encode on this thread, then write and flush
    /// here when the writer is free and the connection quiet, else queue for the writer role.</summary>
    public void SendSmallFrame(uint callId) => _connection.Outbound.SendStreamCredit(callId, FrameFlags.None, SmallFrameCredit);

    /// <summary>Starts <paramref name="count"/> calls that nobody answers, so the connection holds
    /// calls in flight and takes itself to be under load (no sender writes and flushes inline).
    /// Their Requests go out through the drain.</summary>
    public void HoldCalls(int count)
    {
        UserServiceContracts.EnsureRegistered();
        IUserService proxy = _client.CreateProxy<IUserService>();
        for (int i = 0; i < count; i++)
        {
            _heldCalls.Add(proxy.Add(i, 1));
        }

        if (_client.PendingCalls != count)
        {
            throw new InvalidOperationException($"The connection holds {_client.PendingCalls} calls; expected {count}.");
        }
    }

    /// <summary>
    /// <paramref name="count"/> frames of <paramref name="kind"/>, back to back, for call ids the
    /// client never used: every one is parsed and handed on by the reader loop, none completes a call.
    /// </summary>
    public static byte[] EncodeFrames(InboundFrame kind, int count)
    {
        MessagePackSerializerOptions serializer = MuxSerializerOptions.ForClient(MessagePackSerializerOptions.Standard);
        Span<byte> credit = stackalloc byte[ProtocolConstants.StreamCreditPayloadSize];
        BinaryPrimitives.WriteUInt32LittleEndian(credit, 1);
        using var frames = new PooledBufferWriter();
        for (int i = 0; i < count; i++)
        {
            uint callId = 1_000_000u + (uint)i;
            if (kind == InboundFrame.Response)
            {
                var body = new MessagePackBody<int>(i, serializer);
                FrameWriter.Write(frames, FrameType.Response, callId, 0, ref body);
            }
            else
            {
                FrameWriter.WriteRaw(frames, FrameType.StreamCredit, callId, credit);
            }
        }

        return frames.WrittenSpan.ToArray();
    }

    /// <summary>Closes the connection (the held calls fail with it) and ends both pipes.</summary>
    public async ValueTask DisposeAsync()
    {
        await _client.DisposeAsync();
        foreach (ValueTask<int> call in _heldCalls)
        {
            try
            {
                await call;
            }
            catch (MuxConnectionException)
            {
                // Failed by the close, as expected.
            }
        }

        await ToConnection.CompleteAsync();
    }

    private sealed class DuplexPipe(PipeReader input, PipeWriter output) : IDuplexPipe
    {
        public PipeReader Input { get; } = input;

        public PipeWriter Output { get; } = output;
    }
}
