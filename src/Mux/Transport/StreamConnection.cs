using System.Buffers;
using System.Net.Security;
using System.Net.Sockets;
using System.Security.Cryptography.X509Certificates;

namespace Mux.Transport;

/// <summary>
/// A <see cref="ByteTransport"/> over a <see cref="Stream"/> (a TLS <see cref="SslStream"/>, or any
/// stream a user hands us). The send loop writes everything flushed since the last send in ONE
/// stream write, gathering a multi-segment buffer into one contiguous block first: over TLS each
/// stream write becomes at least one record and one socket send, so writing segment by segment
/// would undo the batching.
/// </summary>
internal sealed class StreamConnection : ByteTransport
{
    // A gathered write is at most this large; bigger flushes go out in several writes of this size
    // (TLS cuts records at 16 KiB anyway, so larger blocks would gain nothing).
    private const int MaxGatheredWrite = 64 * 1024;

    private readonly Stream _stream;

    // Cancelled by the close, after the stream is disposed: a pending read or write need not end when
    // its stream is disposed (a PipeReader's or PipeWriter's stream's does not), and the close waits
    // for both loops.
    private readonly CancellationTokenSource _closed = new();

    // Where a multi-segment flush is gathered; rented on the first, kept until the send loop has
    // ended (renting per flush would take one from another thread's pool now and then, and
    // allocate). Only the send loop touches it until then.
    private byte[]? _gather;

    /// <summary>Checks a stream a user hands to Mux (a client's connect, a server's accept) before
    /// anything is done with it.</summary>
    /// <exception cref="ArgumentNullException"><paramref name="stream"/> is null.</exception>
    /// <exception cref="ArgumentException">It cannot both read and write.</exception>
    public static void RequireDuplex(Stream stream)
    {
        ArgumentNullException.ThrowIfNull(stream);
        if (!stream.CanRead || !stream.CanWrite)
        {
            throw new ArgumentException("A Mux connection needs a stream that can both read and write.", nameof(stream));
        }
    }

    /// <param name="stream">The connected stream; this connection owns it.</param>
    /// <param name="socket">The socket under <paramref name="stream"/> when the caller knows it
    /// (an <see cref="SslStream"/> hides its inner stream); found by itself for a <see cref="NetworkStream"/>.</param>
    /// <param name="maxFrameSize">The largest frame the reader accepts, which sizes the input pipe.</param>
    /// <param name="clock">The side's clock, for the close's grace period.</param>
    public StreamConnection(Stream stream, Socket? socket, int maxFrameSize, TimeProvider clock)
        : base(socket ?? (stream as NetworkStream)?.Socket, maxFrameSize, clock)
    {
        _stream = stream;

        // Read once, now: it is settled by the time a connection is made over the stream (the TLS
        // handshake has completed).
        RemoteCertificate = (stream as SslStream)?.RemoteCertificate as X509Certificate2;
    }

    protected override ValueTask<int> ReceiveAsync(Memory<byte> memory) => _stream.ReadAsync(memory, _closed.Token);

    protected override ValueTask SendAsync(ReadOnlySequence<byte> buffer)
    {
        if (buffer.IsSingleSegment)
        {
            CountSend();
            return _stream.WriteAsync(buffer.First, _closed.Token);
        }

        return WriteGatheredAsync(buffer);
    }

    private async ValueTask WriteGatheredAsync(ReadOnlySequence<byte> buffer)
    {
        byte[] gather = _gather ??= ArrayPool<byte>.Shared.Rent(MaxGatheredWrite);
        while (!buffer.IsEmpty)
        {
            int length = (int)Math.Min(buffer.Length, gather.Length);
            buffer.Slice(0, length).CopyTo(gather);
            CountSend();
            await _stream.WriteAsync(gather.AsMemory(0, length), _closed.Token).ConfigureAwait(false);
            buffer = buffer.Slice(length);
        }
    }

    /// <summary>TLS close_notify, then FIN (or the close, without a socket).</summary>
    protected override async ValueTask FinishSendingAsync()
    {
        await _stream.FlushAsync(_closed.Token).ConfigureAwait(false);
        if (_stream is SslStream ssl)
        {
            await ssl.ShutdownAsync().ConfigureAwait(false);
        }

        await base.FinishSendingAsync().ConfigureAwait(false);
    }

    protected override void Close()
    {
        CloseQuietly(_stream);
        try
        {
            _closed.Cancel();
        }
        catch (AggregateException)
        {
            // What a user's stream registered on the token failed: the read is cancelled all the same.
        }
    }

    /// <summary>Disposes <paramref name="stream"/>, which may be a user's: whatever it throws, it is
    /// closed as far as we are concerned.</summary>
    public static void CloseQuietly(Stream stream)
    {
        try
        {
            stream.Dispose();
        }
        catch (Exception)
        {
            // A stream that fails to close (a user's stream may throw anything) is closed as far as
            // we are concerned.
        }
    }

    // Any stream's failure ends the connection: a user's stream may throw anything.
    protected override bool IsTransportError(Exception error) => true;

    protected override void ReleaseSendBuffers()
    {
        if (Interlocked.Exchange(ref _gather, null) is { } gather)
        {
            ArrayPool<byte>.Shared.Return(gather);
        }
    }
}
