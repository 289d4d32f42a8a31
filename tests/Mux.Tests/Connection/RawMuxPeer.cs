using System.Buffers;
using System.Net;
using System.Net.Sockets;
using Mux.Protocol;
using Mux.Tests.Infrastructure;
using static Mux.Tests.Protocol.ProtocolTestHelpers;

namespace Mux.Tests.Connection;

/// <summary>A client that speaks the wire protocol by hand over loopback TCP, so a test can
/// behave as a hostile or unlucky peer would: send ids out of order, read slowly, never read.</summary>
internal sealed class RawMuxPeer : IAsyncDisposable
{
    private readonly Socket _socket;
    private readonly byte[] _chunk;
    private byte[] _received = new byte[64 * 1024];
    private int _start;
    private int _end;

    private RawMuxPeer(Socket socket, int chunkSize)
    {
        _socket = socket;
        _chunk = new byte[chunkSize];
    }

    /// <summary>Connects; a small <paramref name="receiveBufferSize"/> makes the kernel hold little
    /// for us, and <paramref name="chunkSize"/> is how much each socket read takes.</summary>
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

    /// <summary>Sends Hello and returns the server's HelloAck settings.</summary>
    public async Task<HandshakeSettings> HandshakeAsync()
    {
        await SendAsync(WriteHelloFrame(FrameType.Hello, new HandshakeSettings(ProtocolConstants.Version, 4 * 1024 * 1024, int.MaxValue, null)));
        Protocol.ReceivedFrame ack = await ReceiveFrameAsync() ?? throw new InvalidOperationException("The server closed during the handshake.");
        Assert.Equal(FrameType.HelloAck, ack.Type);
        return HandshakeSettings.Parse(new ReadOnlySequence<byte>(ack.Payload));
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
        WriteFrame(FrameType.Request, callId, TestServiceIds.Add, new Protocol.RawBody(MessagePack.MessagePackSerializer.Serialize((a, b))));

    /// <summary>A request for any test method, its arguments given as a tuple.</summary>
    public static byte[] Request<TArguments>(uint callId, string method, TArguments arguments) =>
        WriteFrame(FrameType.Request, callId, MuxMethodId.Compute("Mux.Tests.Infrastructure.ITestService." + method), new Protocol.RawBody(MessagePack.MessagePackSerializer.Serialize(arguments)));

    /// <summary>Tells the server we send nothing more (FIN); we keep reading.</summary>
    public void ShutdownSend() => _socket.Shutdown(SocketShutdown.Send);

    /// <summary>Receives until one whole frame has arrived and returns it; null when the server
    /// ended the stream cleanly. A reset fails the test (it is what a graceful close must avoid).</summary>
    public async Task<Protocol.ReceivedFrame?> ReceiveFrameAsync()
    {
        while (true)
        {
            var buffer = new ReadOnlySequence<byte>(_received, _start, _end - _start);
            if (FrameReader.TryRead(ref buffer, 16 * 1024 * 1024, out Frame frame))
            {
                Protocol.ReceivedFrame copy = Protocol.ReceivedFrame.From(frame);
                _start = _end - (int)buffer.Length;
                return copy;
            }

            int received = await _socket.ReceiveAsync(_chunk.AsMemory(), SocketFlags.None).AsTask().WaitAsync(TestHost.Patience);
            if (received == 0)
            {
                Assert.True(_start == _end, $"The server ended the stream inside a frame ({_end - _start} bytes left).");
                return null;
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

    public ValueTask DisposeAsync()
    {
        _socket.Dispose();
        return ValueTask.CompletedTask;
    }
}
