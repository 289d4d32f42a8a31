using System.Net.Sockets;
using Mux.Tests.Infrastructure;
using Mux.Transport;

namespace Mux.Tests.Transport;

public sealed class ByteTransportTests
{
    /// <summary>
    /// The server builds an accepted socket's transport on its accept loop, so building it must not
    /// throw for a socket that is already gone: macOS refuses TCP_NODELAY on a socket its peer reset
    /// (a TCP health check that connects and resets at once), a disposed socket refuses it
    /// everywhere. Such a transport fails when it reads, costing only its own connection.
    /// </summary>
    [Fact]
    public async Task ASocketAlreadyGone_StillMakesATransport_WhichFailsWhenItReads()
    {
        var socket = new Socket(AddressFamily.InterNetwork, SocketType.Stream, ProtocolType.Tcp);
        socket.Dispose();

        var transport = new SocketConnection(socket, 64 * 1024, TimeProvider.System);
        Assert.Null(transport.RemoteEndPoint);
        transport.Start();
        await Assert.ThrowsAsync<ObjectDisposedException>(() => transport.Input.ReadAsync().AsTask().WaitAsync(TestHost.Patience));

        await transport.Output.CompleteAsync();
        await transport.DisposeAsync().AsTask().WaitAsync(TestHost.Patience);
    }
}
