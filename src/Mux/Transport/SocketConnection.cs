using System.IO.Pipelines;
using System.Net;
using System.Net.Sockets;

namespace Mux.Transport;

/// <summary>
/// Pumps bytes between a connected socket and a pair of pipes: the receive loop fills
/// <see cref="Input"/>; the send loop drains <see cref="Output"/> and sends everything that is
/// buffered in one socket write. Both pipes resume their readers inline, so a flush of the output
/// runs the socket send on the flushing thread (no hop when idle) and a receive runs the frame
/// parser on the I/O thread (the parser only slices and dispatches; it never runs user code).
/// </summary>
internal sealed class SocketConnection : IMuxTransport
{
    private readonly Socket _socket;
    private readonly Pipe _input;
    private readonly Pipe _output;
    private readonly SocketSender _sender = new();

    // The side's clock, for the close's grace period. Immutable.
    private readonly TimeProvider _clock;
    private Task? _receiveLoop;
    private Task? _sendLoop;

    // Counters written only by their own loop (receive or send) and read racily for statistics.
    private long _socketReceives;
    private long _socketSends;
    private long _bytesReceived;
    private long _bytesSent;

    // 0 until DisposeAsync or a transport fault shuts the socket down; set with Interlocked.
    private int _shutdown;

    public SocketConnection(Socket socket, int maxFrameSize, TimeProvider clock)
    {
        _clock = clock;
        _socket = socket;
        if (socket.ProtocolType == ProtocolType.Tcp)
        {
            _socket.NoDelay = true; // Not a Unix domain socket option.
        }

        RemoteEndPoint = socket.RemoteEndPoint;

        _input = TransportPipes.CreateInput(maxFrameSize);
        _output = TransportPipes.CreateOutput();
    }

    public PipeReader Input => _input.Reader;

    public PipeWriter Output => _output.Writer;

    public EndPoint? RemoteEndPoint { get; }

    public long SocketReceives => Volatile.Read(ref _socketReceives);

    public long SocketSends => Volatile.Read(ref _socketSends);

    public long BytesReceived => Volatile.Read(ref _bytesReceived);

    public long BytesSent => Volatile.Read(ref _bytesSent);

    public void Start()
    {
        _receiveLoop = ReceiveLoopAsync();
        _sendLoop = SendLoopAsync();
    }

    private async Task ReceiveLoopAsync()
    {
        Exception? error = null;
        PipeWriter writer = _input.Writer;
        try
        {
            while (true)
            {
                Memory<byte> memory = writer.GetMemory(TransportPipes.ReceiveBufferSize);
                int received = await _socket.ReceiveAsync(memory, SocketFlags.None).ConfigureAwait(false);
                if (received == 0)
                {
                    break; // The peer closed its side.
                }

                writer.Advance(received);
                _socketReceives++;
                _bytesReceived += received;

                FlushResult flush = await writer.FlushAsync().ConfigureAwait(false);
                if (flush.IsCompleted || flush.IsCanceled)
                {
                    break; // The reader is done with this connection.
                }
            }
        }
        catch (Exception ex) when (ex is SocketException or ObjectDisposedException)
        {
            // After a local shutdown the socket errors are expected and say nothing.
            error = Volatile.Read(ref _shutdown) == 0 ? ex : null;
        }
        finally
        {
            await writer.CompleteAsync(error).ConfigureAwait(false);
        }
    }

    private async Task SendLoopAsync()
    {
        Exception? error = null;
        bool finished = false;
        PipeReader reader = _output.Reader;
        try
        {
            while (true)
            {
                ReadResult result = await reader.ReadAsync().ConfigureAwait(false);
                var buffer = result.Buffer;
                if (!buffer.IsEmpty)
                {
                    // Everything that was flushed since the last send goes out in one write.
                    int sent = await _sender.SendAsync(_socket, buffer).ConfigureAwait(false);
                    _socketSends++;
                    _bytesSent += sent;
                }

                reader.AdvanceTo(buffer.End);
                if (result.IsCompleted || result.IsCanceled)
                {
                    finished = result.IsCompleted;
                    break;
                }
            }
        }
        catch (Exception ex) when (ex is SocketException or ObjectDisposedException)
        {
            error = Volatile.Read(ref _shutdown) == 0 ? ex : null;
        }
        finally
        {
            await reader.CompleteAsync(error).ConfigureAwait(false);
            if (finished)
            {
                // Everything the owner wrote has been sent: tell the peer (FIN) but keep receiving,
                // because closing a socket with unread bytes makes the kernel send a reset, which
                // can destroy our last bytes before the peer reads them.
                ShutdownSend();
            }
            else
            {
                // Stop receiving too: a connection that cannot send is of no use, and this wakes the
                // reader loop so that pending calls fail now rather than at their deadlines.
                ShutdownSocket();
            }
        }
    }

    private void ShutdownSend()
    {
        if (Volatile.Read(ref _shutdown) != 0)
        {
            return;
        }

        try
        {
            _socket.Shutdown(SocketShutdown.Send);
        }
        catch (Exception ex) when (ex is SocketException or ObjectDisposedException)
        {
            // Already closed or reset: nothing left to tell the peer.
        }
    }

    private void ShutdownSocket()
    {
        if (Interlocked.Exchange(ref _shutdown, 1) != 0)
        {
            return;
        }

        try
        {
            _socket.Shutdown(SocketShutdown.Both);
        }
        catch (Exception ex) when (ex is SocketException or ObjectDisposedException)
        {
            // Already closed by the peer: nothing left to shut down.
        }

        _socket.Dispose();
    }

    /// <summary>Shuts the socket down at once, both ways (pending output is dropped); the loops end
    /// on their own, and <see cref="DisposeAsync"/> waits for them.</summary>
    public void Abort() => ShutdownSocket();

    /// <summary>
    /// Lets the send loop finish what was flushed, then closes the socket. The owner completes
    /// <see cref="Output"/> first (only it knows when no writer is active) and, for a graceful close,
    /// has already read until the peer ended its stream; if the peer stops reading, the send is
    /// abandoned after a grace period rather than hanging the close.
    /// </summary>
    public async ValueTask DisposeAsync()
    {
        await TransportClose.DrainAndShutdownAsync(_sendLoop, _receiveLoop, ShutdownSocket, _clock).ConfigureAwait(false);

        _sender.Dispose();
    }
}
