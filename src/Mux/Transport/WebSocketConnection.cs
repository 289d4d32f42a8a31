using System.Buffers;
using System.Net;
using System.Net.WebSockets;
using System.Runtime.CompilerServices;
using System.Security.Cryptography.X509Certificates;

namespace Mux.Transport;

/// <summary>
/// The frames travel as one byte stream cut into binary messages with no meaning of their own. A close sends the
/// WebSocket Close (the stream's end, as a FIN is over TCP) and keeps reading until the peer's Close.
/// </summary>
internal sealed class WebSocketConnection : ByteTransport
{
    public const string SubProtocol = "mux";

    // How long a close waits for the peer to end its stream before it aborts the WebSocket.
    private static readonly TimeSpan s_peerGracePeriod = TimeSpan.FromSeconds(1);

    private readonly WebSocket _webSocket;

    private readonly TimeProvider _clock;

    // What the WebSocket was opened through and must outlive it (the client's HTTP handler); disposed by the close.
    private readonly IDisposable? _owned;

    public WebSocketConnection(
        WebSocket webSocket, EndPoint? remoteEndPoint, X509Certificate2? remoteCertificate, int maxFrameSize, TimeProvider clock,
        IDisposable? owned = null)
        : base(socket: null, maxFrameSize, clock)
    {
        _webSocket = webSocket;
        _clock = clock;
        _owned = owned;
        RemoteEndPoint = remoteEndPoint;
        RemoteCertificate = remoteCertificate;
    }

    // No token: one the WebSocket registers on costs every receive and send, and the close aborts the WebSocket anyway.
    [AsyncMethodBuilder(typeof(PoolingAsyncValueTaskMethodBuilder<>))]
    protected override async ValueTask<int> ReceiveAsync(Memory<byte> memory)
    {
        while (true)
        {
            ValueWebSocketReceiveResult result = await _webSocket.ReceiveAsync(memory, CancellationToken.None).ConfigureAwait(false);
            if (result.MessageType == WebSocketMessageType.Binary)
            {
                if (result.Count > 0)
                {
                    return result.Count;
                }

                continue; // An empty message carries no bytes; returning 0 would read as the stream's end.
            }

            if (result.MessageType == WebSocketMessageType.Close)
            {
                return 0; // The peer ended its stream.
            }

            throw new WebSocketException(
                WebSocketError.InvalidMessageType, "The peer sent a text WebSocket message; Mux frames travel in binary messages only.");
        }
    }

    protected override ValueTask SendAsync(ReadOnlySequence<byte> buffer)
    {
        if (buffer.IsSingleSegment)
        {
            CountSend();
            return _webSocket.SendAsync(buffer.First, WebSocketMessageType.Binary, endOfMessage: true, CancellationToken.None);
        }

        return SendSegmentsAsync(buffer);
    }

    /// <summary>One message for what was flushed, a WebSocket frame per segment: no gathering copy, since the WebSocket
    /// copies each frame into its own buffer anyway to put its header before it.</summary>
    [AsyncMethodBuilder(typeof(PoolingAsyncValueTaskMethodBuilder))]
    private async ValueTask SendSegmentsAsync(ReadOnlySequence<byte> buffer)
    {
        SequencePosition position = buffer.Start;
        ReadOnlyMemory<byte> segment = default;
        bool first = true;
        while (buffer.TryGet(ref position, out ReadOnlyMemory<byte> next))
        {
            if (next.IsEmpty)
            {
                continue;
            }

            if (!first)
            {
                CountSend();
                await _webSocket.SendAsync(segment, WebSocketMessageType.Binary, endOfMessage: false, CancellationToken.None).ConfigureAwait(false);
            }

            segment = next;
            first = false;
        }

        CountSend();
        await _webSocket.SendAsync(segment, WebSocketMessageType.Binary, endOfMessage: true, CancellationToken.None).ConfigureAwait(false);
    }

    /// <summary>This side keeps receiving until the peer's own Close.</summary>
    protected override async ValueTask FinishSendingAsync()
    {
        if (_webSocket.State is WebSocketState.Open or WebSocketState.CloseReceived)
        {
            await _webSocket.CloseOutputAsync(WebSocketCloseStatus.NormalClosure, null, CancellationToken.None).ConfigureAwait(false);
        }
    }

    /// <summary>
    /// Waits for the peer to end its stream, 1 s at most: unlike a socket's kernel, a web server may still hold the last
    /// output, and aborting an accepted WebSocket aborts its HTTP connection and drops it.
    /// </summary>
    protected override void Close()
    {
        if (ReceiveLoop is { IsCompleted: false } receiving)
        {
            _ = ReleaseWhenPeerDoneAsync(receiving);
            return;
        }

        Release();
    }

    private async Task ReleaseWhenPeerDoneAsync(Task receiving)
    {
        try
        {
            await receiving.WaitAsync(s_peerGracePeriod, _clock).ConfigureAwait(false);
        }
        catch (TimeoutException)
        {
            // The peer goes on sending or stays silent: what is left for it goes with the abort.
        }

        Release();
    }

    /// <summary>Aborts only before the Close handshake is done, so a web server ends its request gracefully.</summary>

    private void Release()
    {
        if (_webSocket.State != WebSocketState.Closed)
        {
            _webSocket.Abort();
        }

        _webSocket.Dispose();
        _owned?.Dispose();
    }

    // Whatever a WebSocket throws (its own exception, the IOException of the stream under it, ObjectDisposedException
    // after the close) ends the connection.
    protected override bool IsTransportError(Exception error) => true;

    protected override void ReleaseSendBuffers()
    {
    }
}
