using System.Buffers;
using System.IO.Pipelines;
using System.Net;
using System.Net.Security;
using System.Net.Sockets;
using System.Security.Cryptography.X509Certificates;

namespace Mux.Transport;

/// <summary>
/// Pumps bytes between a <see cref="Stream"/> (a TLS <see cref="SslStream"/>, or any stream a user
/// hands us) and a pair of pipes, like <see cref="SocketConnection"/> does for a bare socket. The
/// send loop writes everything flushed since the last send in ONE stream write, gathering a
/// multi-segment buffer into one contiguous block first: over TLS each stream write becomes at least
/// one record and one socket send, so writing segment by segment would undo the batching.
/// </summary>
internal sealed class StreamConnection : IMuxTransport
{
    // A gathered write is at most this large; bigger flushes go out in several writes of this size
    // (TLS cuts records at 16 KiB anyway, so larger blocks would gain nothing).
    private const int MaxGatheredWrite = 64 * 1024;

    private readonly Stream _stream;

    // The socket under the stream when there is one (our own, or a NetworkStream's): lets a
    // finished send half-close (FIN) while the receive loop keeps reading.
    private readonly Socket? _socket;
    private readonly Pipe _input;
    private readonly Pipe _output;

    // The side's clock, for the close's grace period. Immutable.
    private readonly TimeProvider _clock;
    private Task? _receiveLoop;
    private Task? _sendLoop;

    // Counters written only by their own loop (receive or send) and read racily for statistics.
    private long _streamReads;
    private long _streamWrites;

    // 0 until DisposeAsync, Abort or a fault closes the stream; set with Interlocked.
    private int _shutdown;

    /// <param name="stream">The connected stream; this connection owns it.</param>
    /// <param name="socket">The socket under <paramref name="stream"/> when the caller knows it
    /// (an <see cref="SslStream"/> hides its inner stream); found by itself for a <see cref="NetworkStream"/>.</param>
    /// <param name="maxFrameSize">The largest frame the reader accepts, which sizes the input pipe.</param>
    /// <param name="clock">The side's clock, for the close's grace period.</param>
    public StreamConnection(Stream stream, Socket? socket, int maxFrameSize, TimeProvider clock)
    {
        _stream = stream;
        _clock = clock;
        _socket = socket ?? (stream as NetworkStream)?.Socket;
        if (_socket is { ProtocolType: ProtocolType.Tcp })
        {
            _socket.NoDelay = true;
        }

        _input = TransportPipes.CreateInput(maxFrameSize);
        _output = TransportPipes.CreateOutput();

        // Read once, now: both are settled by the time a connection is made over the stream (the
        // TLS handshake has completed), and a socket's address cannot be read once it is disposed.
        RemoteEndPoint = ReadRemoteEndPoint(_socket);
        RemoteCertificate = (stream as SslStream)?.RemoteCertificate as X509Certificate2;
    }

    public EndPoint? RemoteEndPoint { get; }

    public X509Certificate2? RemoteCertificate { get; }

    private static EndPoint? ReadRemoteEndPoint(Socket? socket)
    {
        try
        {
            return socket?.RemoteEndPoint;
        }
        catch (Exception ex) when (ex is SocketException or ObjectDisposedException)
        {
            return null; // Already gone: the connection fails on its first read anyway.
        }
    }

    public PipeReader Input => _input.Reader;

    public PipeWriter Output => _output.Writer;

    /// <summary>Stream reads so far (over TLS, each returns one or more decrypted records).</summary>
    public long SocketReceives => Volatile.Read(ref _streamReads);

    /// <summary>Stream writes so far: one per flush of the output (per 64 KiB of a larger one).</summary>
    public long SocketSends => Volatile.Read(ref _streamWrites);

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
                int received = await _stream.ReadAsync(memory).ConfigureAwait(false);
                if (received == 0)
                {
                    break; // The peer closed its side.
                }

                writer.Advance(received);
                _streamReads++;

                FlushResult flush = await writer.FlushAsync().ConfigureAwait(false);
                if (flush.IsCompleted || flush.IsCanceled)
                {
                    break; // The reader is done with this connection.
                }
            }
        }
        catch (Exception ex)
        {
            // Any stream's failure ends the connection (a user's stream may throw anything).
            // After a local close the stream's errors are expected and say nothing.
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
        byte[]? gather = null;
        try
        {
            while (true)
            {
                ReadResult result = await reader.ReadAsync().ConfigureAwait(false);
                ReadOnlySequence<byte> buffer = result.Buffer;
                if (buffer.IsSingleSegment)
                {
                    if (!buffer.IsEmpty)
                    {
                        await _stream.WriteAsync(buffer.First).ConfigureAwait(false);
                        _streamWrites++;
                    }
                }
                else
                {
                    gather ??= ArrayPool<byte>.Shared.Rent(MaxGatheredWrite);
                    await WriteGatheredAsync(buffer, gather).ConfigureAwait(false);
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
                await FinishSendingAsync().ConfigureAwait(false);
            }
        }
        catch (Exception ex)
        {
            error = Volatile.Read(ref _shutdown) == 0 ? ex : null;
            finished = false;
        }
        finally
        {
            if (gather is not null)
            {
                ArrayPool<byte>.Shared.Return(gather);
            }

            await reader.CompleteAsync(error).ConfigureAwait(false);
            if (!finished)
            {
                // A connection that cannot send is of no use; closing also wakes the receive loop
                // so that pending calls fail now rather than at their deadlines.
                Shutdown();
            }
        }
    }

    private async ValueTask WriteGatheredAsync(ReadOnlySequence<byte> buffer, byte[] gather)
    {
        while (!buffer.IsEmpty)
        {
            int length = (int)Math.Min(buffer.Length, gather.Length);
            buffer.Slice(0, length).CopyTo(gather);
            await _stream.WriteAsync(gather.AsMemory(0, length)).ConfigureAwait(false);
            _streamWrites++;
            buffer = buffer.Slice(length);
        }
    }

    /// <summary>
    /// Everything the owner wrote has been written: tell the peer (TLS close_notify, then FIN) but
    /// keep receiving, because closing a socket with unread bytes makes the kernel send a reset,
    /// which can destroy our last bytes before the peer reads them. A stream with no socket under
    /// it cannot half-close, so it is closed whole.
    /// </summary>
    private async ValueTask FinishSendingAsync()
    {
        await _stream.FlushAsync().ConfigureAwait(false);
        if (_stream is SslStream ssl)
        {
            await ssl.ShutdownAsync().ConfigureAwait(false);
        }

        if (_socket is null)
        {
            Shutdown();
            return;
        }

        try
        {
            if (Volatile.Read(ref _shutdown) == 0)
            {
                _socket.Shutdown(SocketShutdown.Send);
            }
        }
        catch (Exception ex) when (ex is SocketException or ObjectDisposedException)
        {
            // Already closed or reset: nothing left to tell the peer.
        }
    }

    private void Shutdown()
    {
        if (Interlocked.Exchange(ref _shutdown, 1) != 0)
        {
            return;
        }

        try
        {
            _socket?.Shutdown(SocketShutdown.Both);
        }
        catch (Exception ex) when (ex is SocketException or ObjectDisposedException)
        {
            // Already closed by the peer: nothing left to shut down.
        }

        try
        {
            _stream.Dispose();
        }
        catch (Exception)
        {
            // A stream that fails to close (a user's stream may throw anything) is closed as far as
            // we are concerned.
        }
    }

    /// <summary>Closes the stream at once; pending output is dropped.</summary>
    public void Abort() => Shutdown();

    /// <summary>
    /// Lets the send loop finish what was flushed, then closes the stream. The owner completes
    /// <see cref="Output"/> first; if the peer stops reading, the send is abandoned after a grace
    /// period rather than hanging the close.
    /// </summary>
    public async ValueTask DisposeAsync()
    {
        await TransportClose.DrainAndShutdownAsync(_sendLoop, _receiveLoop, Shutdown, _clock).ConfigureAwait(false);
    }
}
