using System.Buffers;
using System.Net.Sockets;

namespace Mux.Transport;

/// <summary>Everything flushed since the last send goes out in one socket write (<see cref="SocketSender"/>).</summary>

internal sealed class SocketConnection : ByteTransport
{
    private readonly Socket _socket;
    private readonly SocketSender _sender = new();

    public SocketConnection(Socket socket, int maxFrameSize, TimeProvider clock)
        : base(socket, maxFrameSize, clock)
    {
        _socket = socket;
    }

    protected override ValueTask<int> ReceiveAsync(Memory<byte> memory) => _socket.ReceiveAsync(memory, SocketFlags.None);

    protected override ValueTask SendAsync(ReadOnlySequence<byte> buffer)
    {
        CountSend();
        return _sender.SendAsync(_socket, buffer);
    }

    protected override void Close() => _socket.Dispose();

    protected override bool IsTransportError(Exception error) => error is SocketException or ObjectDisposedException;

    protected override void ReleaseSendBuffers() => _sender.Dispose();
}
