using System.Buffers;
using System.Net.Security;
using System.Net.Sockets;
using System.Security.Cryptography.X509Certificates;

namespace Mux.Transport;

/// <summary>
/// Everything flushed since the last send goes out in one stream write, gathered first: over TLS each write becomes at
/// least one record and one socket send, so writing segment by segment would undo the batching.
/// </summary>
internal sealed class StreamConnection : ByteTransport
{
    // Larger flushes go out in several writes: TLS cuts records at 16 KiB anyway, so larger blocks would gain nothing.
    private const int MaxGatheredWrite = 64 * 1024;

    private readonly Stream _stream;

    // Cancelled by the close, after the stream is disposed: a pending read or write need not end when its stream is
    // disposed (a PipeReader's or PipeWriter's stream's does not), and the close waits for both loops.
    private readonly CancellationTokenSource _closed = new();

    // Rented on the first multi-segment flush and kept until the send loop has ended, as renting per flush would
    // sometimes allocate. Only the send loop touches it until then.
    private byte[]? _gather;

    public static void RequireDuplex(Stream stream)
    {
        ArgumentNullException.ThrowIfNull(stream);
        if (!stream.CanRead || !stream.CanWrite)
        {
            throw new ArgumentException("A Mux connection needs a stream that can both read and write.", nameof(stream));
        }
    }

    /// <summary>Owns <paramref name="stream"/>. Pass <paramref name="socket"/> when known: an <see cref="SslStream"/>
    /// hides its inner stream.</summary>
    public StreamConnection(Stream stream, Socket? socket, int maxFrameSize, TimeProvider clock)
        : base(socket ?? (stream as NetworkStream)?.Socket, maxFrameSize, clock)
    {
        _stream = stream;

        // Settled by now: the TLS handshake has completed before a connection is made over the stream.
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

    public
 static void CloseQuietly(Stream stream)
    {
        try
        {
            stream.Dispose();
        }
        catch (Exception)
        {
            // A user's stream may throw anything.
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
