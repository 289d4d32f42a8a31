using System.Buffers;
using System.Net.Sockets;
using Mux.Protocol;
using Mux.Tests.Protocol;

namespace Mux.Tests.Infrastructure;

/// <summary>The other end of a Mux connection, written by hand: sends the bytes a test chooses and
/// reads whole frames, each step bounded by <see cref="TestHost.Patience"/>.</summary>
public sealed class RawPeer(Socket socket) : IDisposable
{
    // Bytes received but not yet parsed into a frame. Used by one test task at a time.
    private readonly List<byte> _received = new();

    public async Task SendAsync(byte[] bytes)
    {
        int sent = 0;
        while (sent < bytes.Length)
        {
            sent += await socket.SendAsync(bytes.AsMemory(sent), SocketFlags.None).AsTask().WaitAsync(TestHost.Patience);
        }
    }

    internal async Task<ReceivedFrame> ReceiveFrameAsync()
    {
        byte[] chunk = new byte[64 * 1024];
        using var deadline = new CancellationTokenSource(TestHost.Patience);
        while (true)
        {
            var buffer = new ReadOnlySequence<byte>(_received.ToArray());
            if (FrameReader.TryRead(ref buffer, 16 * 1024 * 1024, out Frame frame))
            {
                ReceivedFrame copy = ReceivedFrame.From(frame);
                _received.RemoveRange(0, _received.Count - (int)buffer.Length);
                return copy;
            }

            int received = await socket.ReceiveAsync(chunk.AsMemory(), SocketFlags.None, deadline.Token);
            Assert.True(received > 0, "The other side closed the connection before a whole frame arrived.");
            _received.AddRange(chunk.AsSpan(0, received));
        }
    }

    /// <summary>Ends the connection the way a server process that exits does: FIN, then close.</summary>
    public void Close()
    {
        socket.Shutdown(SocketShutdown.Both);
        socket.Close();
    }

    public void Dispose() => socket.Dispose();
}
