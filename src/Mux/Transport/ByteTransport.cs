using System.Buffers;
using System.IO.Pipelines;
using System.Net;
using System.Net.Sockets;
using System.Security.Cryptography.X509Certificates;

namespace Mux.Transport;

/// <summary>Pumps bytes between a socket or stream and a pair of pipes: the send loop sends everything flushed at once.</summary>
internal abstract class ByteTransport : IMuxTransport
{
    // How long a close waits for the peer to take what was flushed before dropping it.
    private static readonly TimeSpan s_sendGracePeriod = TimeSpan.FromSeconds(5);

    private readonly Pipe _input;
    private readonly Pipe _output;

    private readonly TimeProvider _clock;

    // The socket under any stream, if there is one: lets a finished send half-close (FIN) while the receive loop
    // keeps reading.
    private readonly Socket? _socket;

    private Task? _receiveLoop;
    private Task? _sendLoop;

    // Counters written only by their own loop (receive or send) and read racily for statistics.
    private long _receives;
    private long _sends;

    // 0 until DisposeAsync, Abort or a fault closes the transport; set with Interlocked.
    private int _shutdown;

    protected ByteTransport(Socket? socket, int maxFrameSize, TimeProvider clock)
    {
        _socket = socket;
        RemoteEndPoint = PrepareSocket(socket);
        _clock = clock;
        _input = TransportPipes.CreateInput(maxFrameSize);
        _output = TransportPipes.CreateOutput();
    }

    public PipeReader Input => _input.Reader;

    public PipeWriter Output => _output.Writer;

    // Set by the constructor from the socket; a transport without one may set it from what its host knows.
    public EndPoint? RemoteEndPoint { get; protected init; }

    // Declared here: a subclass's own property would be hidden behind the interface's default (null).
    public X509Certificate2? RemoteCertificate { get; protected init; }

    public long SocketReceives => Volatile.Read(ref _receives);

    public long SocketSends => Volatile.Read(ref _sends);

    /// <summary>Null before Start.</summary>
    protected Task? ReceiveLoop => _receiveLoop;

    private bool IsShutDown => Volatile.Read(ref _shutdown) != 0;

    public void Start()
    {
        _receiveLoop = ReceiveLoopAsync();
        _sendLoop = SendLoopAsync();
    }

    /// <summary>0 when the peer closed its side.</summary>
    protected abstract ValueTask<int> ReceiveAsync(Memory<byte> memory);

    /// <summary>Counts each write with <see cref="CountSend"/>.</summary>
    protected abstract ValueTask SendAsync(ReadOnlySequence<byte> buffer);

    /// <summary>Sends FIN but keeps receiving. Without a socket nothing can half-close, so the transport closes whole.</summary>
    protected virtual ValueTask FinishSendingAsync()
    {
        if (_socket is null)
        {
            Abort();
        }
        else if (!IsShutDown)
        {
            TryShutdown(SocketShutdown.Send);
        }

        return ValueTask.CompletedTask;
    }

    /// <summary>Runs once, after the socket (if any) is shut down both ways.</summary>
    protected abstract void Close();

    /// <summary>The transport failing, rather than a fault of the loop itself.</summary>
    protected abstract bool IsTransportError(Exception error);

    private async Task ReceiveLoopAsync()
    {
        Exception? error = null;
        PipeWriter writer = _input.Writer;
        try
        {
            while (true)
            {
                Memory<byte> memory = writer.GetMemory(TransportPipes.ReceiveBufferSize);
                int received = await ReceiveAsync(memory).ConfigureAwait(false);
                if (received == 0)
                {
                    break; // The peer closed its side.
                }

                writer.Advance(received);
                _receives++;

                FlushResult flush = await writer.FlushAsync().ConfigureAwait(false);
                if (flush.IsCompleted || flush.IsCanceled)
                {
                    break; // The reader is done with this connection.
                }
            }
        }
        catch (Exception ex) when (IsTransportError(ex))
        {
            // After a local close the transport's errors are expected and say nothing.
            error = IsShutDown ? null : ex;
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
                ReadOnlySequence<byte> buffer = result.Buffer;
                if (!buffer.IsEmpty)
                {
                    await SendAsync(buffer).ConfigureAwait(false);
                }

                reader.AdvanceTo(buffer.End);
                if (result.IsCompleted || result.IsCanceled)
                {
                    finished = result.IsCompleted;
                    break;
                }
            }

            if (finished)
            {
                // Closing a socket with unread bytes sends a reset, which can destroy our last bytes before the peer
                // reads them.
                await FinishSendingAsync().ConfigureAwait(false);
            }
        }
        catch (Exception ex) when (IsTransportError(ex))
        {
            error = IsShutDown ? null : ex;
            finished = false;
        }
        finally
        {
            await reader.CompleteAsync(error).ConfigureAwait(false);
            if (!finished)
            {
                // Closing wakes the receive loop, so pending calls fail now rather than at their deadlines.
                Abort();
            }
        }
    }

    /// <summary>Send loop only.</summary>
    protected void CountSend() => _sends++;

    /// <summary>Drops pending output; the loops end on their own and DisposeAsync waits for them.</summary>
    public void Abort()
    {
        if (Interlocked.Exchange(ref _shutdown, 1) == 0)
        {
            TryShutdown(SocketShutdown.Both);
            Close();
        }
    }

    private void TryShutdown(SocketShutdown how)
    {
        try
        {
            _socket?.Shutdown(how);
        }
        catch (Exception ex) when (ex is SocketException or ObjectDisposedException)
        {
            // Already closed or reset by the peer: nothing left to shut down.
        }
    }

    // Reads the peer's address while the socket can still give it, and turns Nagle off. A socket already gone (macOS
    // refuses TCP_NODELAY on one reset by its peer) fails on its first read anyway, so neither may throw here: on the
    // server that would end the accept loop instead of this one connection.
    private static EndPoint? PrepareSocket(Socket? socket)
    {
        EndPoint? remote = null;
        try
        {
            remote = socket?.RemoteEndPoint;
            if (socket is { ProtocolType: ProtocolType.Tcp })
            {
                socket.NoDelay = true; // Not a Unix domain socket option.
            }
        }
        catch (Exception ex) when (ex is SocketException or ObjectDisposedException)
        {
            // Already gone: the connection fails on its first read.
        }

        return remote;
    }

    /// <summary>
    /// Lets the send loop finish what was flushed, then closes. The owner completes <see cref="Output"/> first (only it
    /// knows when no writer is active); a peer that stops reading is abandoned after a grace period.
    /// </summary>
    public async ValueTask DisposeAsync()
    {
        if (_sendLoop is not null)
        {
            try
            {
                await _sendLoop.WaitAsync(s_sendGracePeriod, _clock).ConfigureAwait(false);
            }
            catch (TimeoutException)
            {
                Abort();
                await _sendLoop.ConfigureAwait(false);
            }
        }

        Abort();
        if (_receiveLoop is not null)
        {
            await _receiveLoop.ConfigureAwait(false);
        }

        ReleaseSendBuffers();
    }

    /// <summary>Runs once the send loop has ended; may run twice.</summary>

    protected abstract void ReleaseSendBuffers();
}
