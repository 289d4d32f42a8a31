using System.Buffers;
using System.Net;
using System.Net.Sockets;
using Mux.Protocol;
using Mux.Tests.Protocol;
using static Mux.Tests.Protocol.ProtocolTestHelpers;

namespace Mux.Tests.Infrastructure;

/// <summary>The other end of a Mux connection, speaking the wire protocol by hand over loopback
/// TCP, as a client or as a server: a test decides exactly which bytes go out and when, and can
/// behave as a hostile or unlucky peer would (ids out of order, slow reads, no reads, a sudden
/// close). Every step is bounded by <see cref="TestHost.Patience"/>.</summary>
internal sealed class RawMuxPeer : IAsyncDisposable, IDisposable
{
    private readonly Socket _socket;
    private readonly byte[] _chunk;

    // Bytes received but not yet returned as a frame: _received[_start.._end]. Used by one test
    // task at a time.
    private byte[] _received = new byte[64 * 1024];
    private int _start;
    private int _end;

    private RawMuxPeer(Socket socket, int chunkSize)
    {
        _socket = socket;
        _chunk = new byte[chunkSize];
    }

    /// <summary>Bytes received but not (yet) parsed into a frame.</summary>
    public byte[] Unread => _received.AsSpan(_start, _end - _start).ToArray();

    /// <summary>Connects as a client; a small <paramref name="receiveBufferSize"/> makes the kernel
    /// hold little for us, and <paramref name="chunkSize"/> is how much each socket read takes.</summary>
    public static async Task<RawMuxPeer> ConnectAsync(EndPoint endPoint, int? receiveBufferSize = null, int chunkSize = 64 * 1024)
    {
        var socket = new Socket(endPoint.AddressFamily, SocketType.Stream, ProtocolType.Tcp) { NoDelay = true };
        if (receiveBufferSize is int size)
        {
            socket.ReceiveBufferSize = size;
        }

        await socket.ConnectAsync(endPoint).WaitAsync(TestHost.Patience);
        return new RawMuxPeer(socket, chunkSize);
    }

    /// <summary>A started listener on 127.0.0.1 and a free port, for a client under test to
    /// connect to and <see cref="AcceptAsync"/> to take its connections from.</summary>
    public static TcpListener Listen()
    {
        var listener = new TcpListener(IPAddress.Loopback, 0);
        listener.Start();
        return listener;
    }

    /// <summary>Accepts one connection as a server (the client under test connects to
    /// <paramref name="listener"/>).</summary>
    public static async Task<RawMuxPeer> AcceptAsync(TcpListener listener)
    {
        Socket socket = await listener.AcceptSocketAsync().WaitAsync(TestHost.Patience);
        socket.NoDelay = true;
        return new RawMuxPeer(socket, 64 * 1024);
    }

    /// <summary>As a client: sends Hello and returns the server's HelloAck settings.</summary>
    public async Task<HandshakeSettings> HandshakeAsync()
    {
        await SendAsync(WriteHelloFrame(FrameType.Hello, new HandshakeSettings(ProtocolConstants.Version, 4 * 1024 * 1024, int.MaxValue, null)));
        ReceivedFrame ack = await ExpectFrameAsync();
        Assert.Equal(FrameType.HelloAck, ack.Type);
        Assert.Equal(0u, ack.CallId);
        return HandshakeSettings.Parse(new ReadOnlySequence<byte>(ack.Payload));
    }

    /// <summary>As a server: waits for the client's Hello and accepts it, allowing
    /// <paramref name="maxConcurrentCalls"/> calls at once.</summary>
    public async Task AnswerHelloAsync(int maxConcurrentCalls = int.MaxValue)
    {
        Assert.Equal(FrameType.Hello, (await ExpectFrameAsync()).Type);
        await SendAsync(WriteHelloFrame(FrameType.HelloAck, new HandshakeSettings(ProtocolConstants.Version, 4 * 1024 * 1024, maxConcurrentCalls, null)));
    }

    public async Task SendAsync(byte[] bytes)
    {
        int sent = 0;
        while (sent < bytes.Length)
        {
            sent += await _socket.SendAsync(bytes.AsMemory(sent), SocketFlags.None).AsTask().WaitAsync(TestHost.Patience);
        }
    }

    /// <summary>Sends everything, however long the peer takes to read it (a test that makes the
    /// server stop reading ends this send by closing the socket).</summary>
    public async Task SendWithoutDeadlineAsync(byte[] bytes)
    {
        int sent = 0;
        while (sent < bytes.Length)
        {
            sent += await _socket.SendAsync(bytes.AsMemory(sent), SocketFlags.None);
        }
    }

    /// <summary>An Add(a, b) request frame.</summary>
    public static byte[] AddRequest(uint callId, int a, int b) =>
        WriteFrame(FrameType.Request, callId, TestServiceIds.Add, new RawBody(MessagePack.MessagePackSerializer.Serialize((a, b))));

    /// <summary>A request for any test method, its arguments given as a tuple.</summary>
    public static byte[] Request<TArguments>(uint callId, string method, TArguments arguments) =>
        WriteFrame(FrameType.Request, callId, MuxMethodId.Compute("Mux.Tests.Infrastructure.ITestService." + method), new RawBody(MessagePack.MessagePackSerializer.Serialize(arguments)));

    /// <summary>Tells the other side we send nothing more (FIN); we keep reading.</summary>
    public void ShutdownSend() => _socket.Shutdown(SocketShutdown.Send);

    /// <summary>Ends the connection the way a process that exits does: FIN, then close.</summary>
    public void Close()
    {
        _socket.Shutdown(SocketShutdown.Both);
        _socket.Close();
    }

    /// <summary>Receives until one whole frame has arrived and returns it; null when the other side
    /// ended the stream cleanly. A reset fails the test (it is what a graceful close must avoid).</summary>
    public async Task<ReceivedFrame?> ReceiveFrameAsync()
    {
        while (true)
        {
            var buffer = new ReadOnlySequence<byte>(_received, _start, _end - _start);
            if (FrameReader.TryRead(ref buffer, 16 * 1024 * 1024, out Frame frame))
            {
                ReceivedFrame copy = ReceivedFrame.From(frame);
                _start = _end - (int)buffer.Length;
                return copy;
            }

            int received = await _socket.ReceiveAsync(_chunk.AsMemory(), SocketFlags.None).AsTask().WaitAsync(TestHost.Patience);
            if (received == 0)
            {
                Assert.True(_start == _end, $"The other side ended the stream inside a frame ({_end - _start} bytes left).");
                return null;
            }

            Append(_chunk.AsSpan(0, received));
        }
    }

    /// <summary>Receives the next whole frame; fails the test if the stream ends first.</summary>
    public async Task<ReceivedFrame> ExpectFrameAsync() =>
        await ReceiveFrameAsync() ?? throw new Xunit.Sdk.XunitException("The other side closed the connection before a whole frame arrived.");

    /// <summary>Reads until the other side closes the connection (end of stream or reset); any
    /// bytes that arrive first stay in <see cref="Unread"/>.</summary>
    public async Task AssertClosedByOtherSideAsync()
    {
        using var deadline = new CancellationTokenSource(TestHost.Patience);
        while (true)
        {
            int received;
            try
            {
                received = await _socket.ReceiveAsync(_chunk.AsMemory(), SocketFlags.None, deadline.Token);
            }
            catch (SocketException ex) when (ex.SocketErrorCode is SocketError.ConnectionReset or SocketError.ConnectionAborted)
            {
                return;
            }
            catch (OperationCanceledException) when (deadline.IsCancellationRequested)
            {
                Assert.Fail($"The other side did not close the connection within {TestHost.Patience}.");
                return;
            }

            if (received == 0)
            {
                return;
            }

            Append(_chunk.AsSpan(0, received));
        }
    }

    private void Append(ReadOnlySpan<byte> bytes)
    {
        if (_end + bytes.Length > _received.Length)
        {
            int live = _end - _start;
            byte[] next = live + bytes.Length > _received.Length ? new byte[Math.Max(_received.Length * 2, live + bytes.Length)] : _received;
            Array.Copy(_received, _start, next, 0, live);
            _received = next;
            _start = 0;
            _end = live;
        }

        bytes.CopyTo(_received.AsSpan(_end));
        _end += bytes.Length;
    }

    public void Dispose() => _socket.Dispose();

    public ValueTask DisposeAsync()
    {
        _socket.Dispose();
        return ValueTask.CompletedTask;
    }
}
